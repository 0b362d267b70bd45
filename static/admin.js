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

// The UTM builder's preview: the target as it will be saved, with the parameters typed
// written in (a parameter the URL has already is replaced, as the server does).
document.addEventListener("DOMContentLoaded", () => {
  const preview = document.getElementById("utm-preview");
  const url = document.getElementById("url");
  if (!preview || !url) return;
  const names = ["utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content"];
  const fields = names.map((name) => document.getElementById(name)).filter(Boolean);
  const show = () => {
    const typed = fields.filter((field) => field.value.trim() !== "");
    let text = url.value.trim();
    if (text && !/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) text = "https://" + text;
    try {
      const target = new URL(text);
      for (const field of typed) target.searchParams.set(field.name, field.value.trim());
      preview.textContent = typed.length ? target.toString() : "";
    } catch {
      preview.textContent = "";
    }
    preview.closest("p").hidden = preview.textContent === "";
  };
  for (const field of [url, ...fields]) field.addEventListener("input", show);
  show();
});

// A chart's values on a tap (touch screens show no hover titles): the title of the bar or
// day tapped is written under the chart.
document.addEventListener("click", (event) => {
  const figure = event.target.closest("figure.chart");
  if (!figure) return;
  const shape = event.target.closest("rect, circle, path, polygon");
  const title = shape && shape.querySelector("title");
  if (!title) return;
  let out = figure.querySelector(".tapped");
  if (!out) {
    out = document.createElement("p");
    out.className = "tapped";
    out.setAttribute("aria-live", "polite");
    figure.appendChild(out);
  }
  out.textContent = title.textContent;
});

// Ticking an app under "Open in browser" page chooses "in these apps" (the server reads the
// radio button; without this script the person chooses it).
document.addEventListener("change", (event) => {
  const box = event.target.closest("input[data-in-app]");
  if (!box || !box.checked) return;
  const apps = box.form && box.form.querySelector('input[name="in_app_mode"][value="apps"]');
  if (apps) apps.checked = true;
});
