// The SMS composer's live count: the same rules as src/rules/sms.rs, applied to the message
// with a stand-in link of the configured length on the shortest domain.
(function () {
  var GSM = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
  var EXTENSION = "\f^{}\\[~]|€";
  var message = document.getElementById("message");
  var output = document.getElementById("live-count");
  var signature = document.getElementById("signature");
  var rule = document.getElementById("rule");
  if (!message || !output) return;

  function units(text, china) {
    var chars = Array.from(text);
    var gsm = !china && chars.every(function (c) { return GSM.indexOf(c) >= 0 || EXTENSION.indexOf(c) >= 0; });
    return {
      encoding: gsm ? "GSM-7" : (china ? "China" : "UCS-2"),
      list: chars.map(function (c) {
        if (gsm) return EXTENSION.indexOf(c) >= 0 ? 2 : 1;
        return c.codePointAt(0) > 0xffff ? 2 : 1;
      })
    };
  }

  function count(text, china) {
    var u = units(text, china);
    var total = u.list.reduce(function (a, b) { return a + b; }, 0);
    var single = u.encoding === "GSM-7" ? 160 : 70;
    var part = u.encoding === "GSM-7" ? 153 : 67;
    if (total <= single) return { encoding: u.encoding, units: total, segments: 1, remaining: single - total };
    var segments = 1, used = 0;
    u.list.forEach(function (n) { if (used + n > part) { segments += 1; used = 0; } used += n; });
    return { encoding: u.encoding, units: total, segments: segments, remaining: part - used };
  }

  function update() {
    var text = message.value.replace("{link}", message.getAttribute("data-stand-in") || "");
    var sig = signature ? signature.value.trim() : "";
    if (sig && sig.charAt(0) !== "【") sig = "【" + sig + "】";
    if (sig && text.indexOf(sig) !== 0) text = sig + text;
    var c = count(text, rule && rule.value === "china");
    // The sentence comes from the page, in its language.
    var format = output.getAttribute(c.segments === 1 ? "data-one" : "data-many") || "";
    output.textContent = format.replace("{encoding}", c.encoding === "China" ? (output.getAttribute("data-china") || c.encoding) : c.encoding).replace("{units}", c.units)
      .replace("{segments}", c.segments).replace("{remaining}", c.remaining);
  }

  [message, signature, rule].forEach(function (el) {
    if (el) { el.addEventListener("input", update); el.addEventListener("change", update); }
  });
  update();
})();
