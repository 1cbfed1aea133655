// MathJax 2 configuration, read by assets/mathjax/MathJax.js (loaded after this file; the
// docs/tools/offline_math.py hook copies MathJax into the site). pymdownx.arithmatex
// (generic mode) writes inline formulas as \( \) and display formulas as \[ \]. The web fonts
// are the STIX-Web fonts that the jupyter-server-mathjax package ships.
window.MathJax = {
  config: ["TeX-AMS-MML_HTMLorMML-full.js"],
  tex2jax: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null},
  messageStyle: "none",
};
