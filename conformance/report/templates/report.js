(function () {
  "use strict";
  var cases = Array.prototype.slice.call(document.querySelectorAll("details.case"));
  var form = document.getElementById("filters");
  var shown = document.getElementById("shown");
  function apply() {
    if (!form) { return; }
    var verdicts = {};
    Array.prototype.forEach.call(form.querySelectorAll("input[name=verdict]"), function (box) {
      verdicts[box.value] = box.checked;
    });
    var level = form.elements.level.value;
    var area = form.elements.area.value;
    var req = form.elements.requirement.value;
    var count = 0;
    cases.forEach(function (el) {
      var d = el.dataset;
      var keep = verdicts[d.verdict] !== false &&
        (!level || d.level === level) && (!area || d.area === area) &&
        (!req || (" " + d.reqs + " ").indexOf(" " + req + " ") >= 0);
      el.hidden = !keep;
      if (keep) { count += 1; }
    });
    if (shown) { shown.textContent = count + " of " + cases.length + " cases shown"; }
  }
  function openTarget() {
    var id;
    try { id = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }
    var el = id && document.getElementById(id);
    if (!el) { return; }
    el.hidden = false;
    if (el.tagName === "DETAILS") { el.open = true; }
    el.scrollIntoView();
  }
  if (form) {
    form.addEventListener("change", apply);
    form.addEventListener("reset", function () { setTimeout(apply, 0); });
    form.hidden = false;
  }
  Array.prototype.forEach.call(document.querySelectorAll("pre.hex.ev"), function (pre) {
    var mark = pre.querySelector("mark");
    if (mark && mark.offsetTop - pre.offsetTop > pre.clientHeight - 40) {
      pre.scrollTop = mark.offsetTop - pre.offsetTop - 40;
    }
  });
  Array.prototype.forEach.call(document.querySelectorAll("details.bug"), function (box) {
    var button = box.querySelector("button.copy");
    var text = box.querySelector("textarea");
    var said = box.querySelector(".copied");
    if (!button || !text) { return; }
    button.addEventListener("click", function () {
      text.select();
      var done = function () { if (said) { said.textContent = "copied"; } };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text.value).then(done, function () {
          document.execCommand("copy");
          done();
        });
      } else {
        document.execCommand("copy");
        done();
      }
    });
  });
  window.addEventListener("hashchange", openTarget);
  apply();
  openTarget();
})();
