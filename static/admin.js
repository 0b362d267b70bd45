// Copy buttons: <button type="button" data-copy="TEXT">Copy</button>
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const label = button.textContent;
  // The words come from the page, in its language.
  const texts = (document.getElementById("main") || document.body).dataset;
  try {
    await navigator.clipboard.writeText(button.dataset.copy);
    button.textContent = texts.copied || label;
  } catch {
    button.textContent = texts.copyFailed || label;
  }
  setTimeout(() => { button.textContent = label; }, 1500);
});

// Focus: the first field with an error, else the form's first field (the one marked
// autofocus), so that keyboard users start where the page wants them.
document.addEventListener("DOMContentLoaded", () => {
  const invalid = document.querySelector("main [aria-invalid='true']");
  if (invalid) { invalid.focus(); return; }
  const first = document.querySelector("main [autofocus]");
  if (first) first.focus();
});
