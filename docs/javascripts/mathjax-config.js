// MathJax 3 reads the equations pymdownx.arithmatex marks (class "arithmatex"): \( ... \)
// inline, \[ ... \] displayed. The script itself is the site's own copy
// (javascripts/mathjax/tex-svg.js, added by docs/hooks/mathjax.py).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
  svg: { fontCache: "global" },
};
