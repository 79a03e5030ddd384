// fabriclens ui: draws the figures the server built (plotly.js), submits forms without reloading
// plotly, uploads config.json files and reports, and follows the live feed. No chart is drawn here.
"use strict";

function renderPlots(root) {
  for (const el of root.querySelectorAll(".plot[data-fig]")) {
    if (el.dataset.drawn) continue;
    const fig = JSON.parse(el.dataset.fig);
    Plotly.newPlot(el, fig.data, fig.layout, { responsive: true, displaylogo: false });
    el.dataset.drawn = "1";
  }
}

function queryOf(form) {
  const params = new URLSearchParams();
  for (const [k, v] of new FormData(form)) {
    if (typeof v === "string" && v.trim() !== "") params.append(k, v.trim());
  }
  return params.toString();
}

async function submitForm(event) {
  event.preventDefault();
  const form = event.target;
  const cmd = form.dataset.cmd;
  const qs = queryOf(form);
  const started = performance.now();
  const resp = await fetch(`/fragment/${cmd}?${qs}`);
  const box = document.getElementById("result");
  box.innerHTML = await resp.text();
  renderPlots(box);
  history.pushState(null, "", `/${cmd}?${qs}`);
  window.fabriclensRenderMs = performance.now() - started;
  document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
}

async function uploadConfig(event) {
  const file = event.target.files[0];
  if (!file) return;
  const resp = await fetch("/api/upload", { method: "POST", body: file, headers: { "X-Filename": file.name } });
  const answer = await resp.json();
  const model = document.querySelector("input[name=model]");
  if (resp.ok) { model.value = answer.model; model.title = answer.name; }
  else { model.value = ""; alert(answer.error); }
}

async function openReport(file) {
  const resp = await fetch("/api/report", { method: "POST", body: file, headers: { "X-Filename": file.name } });
  const box = document.getElementById("report");
  box.innerHTML = await resp.text();
  renderPlots(box);
  document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
}

function setUpReports() {
  const zone = document.getElementById("dropzone");
  if (!zone) return;
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault(); zone.classList.remove("over");
    if (e.dataTransfer.files.length) openReport(e.dataTransfer.files[0]);
  });
  document.getElementById("report-file").addEventListener("change", (e) => {
    if (e.target.files.length) openReport(e.target.files[0]);
  });
}

function setUpLive() {
  const start = document.getElementById("live-start");
  if (!start) return;
  const stop = document.getElementById("live-stop");
  const plot = document.getElementById("fig-live");
  let source = null;
  let count = 0;
  start.addEventListener("click", () => {
    source = new EventSource("/api/watch/stream?interval=1");
    start.disabled = true; stop.disabled = false;
    document.getElementById("live-state").textContent = "running";
    source.addEventListener("sample", (e) => {
      const s = JSON.parse(e.data);
      const busiest = Math.max(0, ...s.links.map((l) => Math.max(l.rx_bits_per_s, l.tx_bits_per_s)));
      Plotly.extendTraces(plot, { x: [[s.t_s], [s.t_s]], y: [[s.gpu_util_pct], [busiest / 1e6]] }, [0, 1], 600);
      count += 1;
      document.getElementById("samples").textContent = String(count);
      document.getElementById("verdict").textContent = s.verdict;
      document.getElementById("running").textContent = s.running;
      const rows = s.links.map((l) => {
        const tr = document.createElement("tr");
        for (const v of [l.name, (l.rx_bits_per_s / 1e6).toFixed(1), (l.tx_bits_per_s / 1e6).toFixed(1),
                         l.load === null ? "-" : (100 * l.load).toFixed(0) + "%"]) {
          const td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
        }
        return tr;
      });
      const head = document.createElement("tr");
      for (const h of ["link", "rx Mbit/s", "tx Mbit/s", "of capacity"]) {
        const th = document.createElement("th"); th.textContent = h; head.appendChild(th);
      }
      document.getElementById("live-links").replaceChildren(head, ...rows);
    });
  });
  stop.addEventListener("click", () => {
    if (source) source.close();
    start.disabled = false; stop.disabled = true;
    document.getElementById("live-state").textContent = "stopped";
  });
}

document.addEventListener("DOMContentLoaded", () => {
  renderPlots(document);
  const form = document.querySelector("form.cmd-form");
  if (form) form.addEventListener("submit", submitForm);
  const upload = document.getElementById("config-upload");
  if (upload) upload.addEventListener("change", uploadConfig);
  document.addEventListener("click", (e) => {
    const id = e.target.dataset && e.target.dataset.copy;
    if (id && navigator.clipboard) navigator.clipboard.writeText(document.getElementById(id).textContent);
  });
  window.addEventListener("popstate", () => location.reload());
  setUpReports();
  setUpLive();
});
