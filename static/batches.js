// The new-batch form uploads with a progress bar: a file of a million rows takes a while.
// Without this script the form posts as usual.
(function () {
  var form = document.getElementById('new-batch');
  var bar = document.getElementById('batch-progress');
  if (!form || !bar || !window.XMLHttpRequest || !window.FormData) return;
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    var request = new XMLHttpRequest();
    bar.hidden = false;
    request.upload.addEventListener('progress', function (e) {
      if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total);
    });
    request.addEventListener('load', function () {
      document.open();
      document.write(request.responseText);
      document.close();
    });
    request.addEventListener('error', function () { form.submit(); });
    request.open('POST', form.action);
    request.send(new FormData(form));
  });
})();
