// MathJax settings for pymdownx.arithmatex (generic mode): $...$ inline, $$...$$ displayed.
// MathJax itself comes from a CDN (mkdocs.yml), so formulas render when online; offline the TeX
// source stays on the page as written.
window.MathJax = {
  tex: {inlineMath: [["\\(", "\\)"]], displayMath: [["\\[", "\\]"]], processEscapes: true, processEnvironments: true},
  options: {ignoreHtmlClass: ".*|", processHtmlClass: "arithmatex"}
};
document$.subscribe(() => {
  if (window.MathJax && MathJax.typesetPromise) {
    MathJax.startup.output.clearCache();
    MathJax.typesetClear();
    MathJax.texReset();
    MathJax.typesetPromise();
  }
});
