// Typesets the math that pymdownx.arithmatex marked in the pages (its "generic" output:
// \( ... \) inline, \[ ... \] displayed) with KaTeX, on each page Material shows.
// Only the marked elements are read: a dollar sign in a command or in code stays as it is.
document$.subscribe(function () {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    renderMathInElement(element, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
    });
  });
});
