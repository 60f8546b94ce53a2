"""MkDocs hook: the site serves its own copy of MathJax, so the equations render offline.

The pages write equations as TeX (``pymdownx.arithmatex``, generic mode); MathJax 3 turns
them into SVG in the browser. Its single-file ``tex-svg.js`` (fonts included as SVG paths, so
nothing else is fetched) comes from the ``django-static-mathjax`` package of the ``docs`` and
``test`` extras (MathJax 3.2.2, Apache-2.0; no Django needed); this hook adds it to the site
as ``javascripts/mathjax/tex-svg.js``, which ``mkdocs.yml`` loads after
``javascripts/mathjax-config.js``. Building needs no network and no CDN.
"""

from __future__ import annotations

from importlib import resources

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

SITE_PATH = "javascripts/mathjax/tex-svg.js"


def mathjax_script() -> str:
    """The path of the packaged ``tex-svg.js``.

    Raises:
        PluginError: if the package is not installed (one line saying how to install it).
    """
    try:
        script = resources.files("mathjax") / "static" / "mathjax" / "es5" / "tex-svg.js"
    except ModuleNotFoundError:
        script = None
    if script is None or not script.is_file():
        raise PluginError(
            "the docs render equations with MathJax from the django-static-mathjax package: "
            'pip install -e ".[docs]"'
        )
    return str(script)


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, SITE_PATH, abs_src_path=mathjax_script()))
    return files
