// The "open in your browser" page: copies the address. In-app browsers often lack the
// asynchronous clipboard, so the selection and execCommand are tried as well.
(function () {
  var button = document.getElementById("copy");
  var field = document.getElementById("address");
  if (!button || !field) return;
  button.addEventListener("click", function () {
    var done = function () { button.textContent = button.getAttribute("data-copied"); };
    field.focus();
    field.select();
    field.setSelectionRange(0, field.value.length);
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(field.value).then(done, function () {
        if (document.execCommand("copy")) done();
      });
    } else if (document.execCommand("copy")) {
      done();
    }
  });
})();
