// The report's stylesheet, inlined into its <style> (the page's CSP allows
// inline styles and nothing else). The task filter is CSS only: radio
// buttons and :has(), so it works with scripts off.
export const REPORT_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #59636e; --line: #d1d9e0;
  --bg: #ffffff; --panel: #f6f8fa; --ok: #1a7f37; --part: #9a6700; --bad: #cf222e;
  --bar: #0969da; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1;
  --line: #3d444d; --bg: #0d1117; --panel: #151b23; --ok: #3fb950; --part: #d29922;
  --bad: #f85149; --bar: #4493f8; } }
body { margin: 0 auto; max-width: 78rem; padding: 1rem 1.5rem 4rem; color: var(--fg);
  background: var(--bg); }
h1 { font-size: 1.6rem; margin: .5rem 0 0; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 1rem 0 .25rem; }
.lede { color: var(--muted); margin: .25rem 0 0; }
.note { border-left: 4px solid var(--bar); background: var(--panel); padding: .4rem .8rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .7rem; text-align: left; }
td.n, th.n { text-align: right; }
tfoot td { font-weight: 600; }
figure { margin: 0; }
figcaption { color: var(--muted); font-size: .9rem; }
svg text { fill: var(--fg); font: 12px system-ui, sans-serif; }
svg .axis { stroke: var(--line); }
svg .bar { fill: var(--bar); }
svg .bar.errors { fill: var(--bad); }
fieldset.filter { border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0 1rem;
  display: flex; gap: 1.2rem; flex-wrap: wrap; }
body:has(#show-below:checked) .task.passed { display: none; }
body:has(#show-errors:checked) .task:not(.errored) { display: none; }
.task { border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0;
  background: var(--bg); }
.task > details > summary { cursor: pointer; padding: .5rem .8rem; display: flex;
  gap: .8rem; flex-wrap: wrap; align-items: baseline; }
.task > details[open] > summary { border-bottom: 1px solid var(--line); background: var(--panel); }
.task .body { padding: .2rem 1rem 1rem; }
.badge { border-radius: 1rem; padding: 0 .55rem; font-size: .85rem; font-weight: 600;
  border: 1px solid currentColor; }
.passed .badge.reward { color: var(--ok); }
.partial .badge.reward { color: var(--part); }
.failed .badge.reward, .badge.error { color: var(--bad); }
.muted { color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .5rem 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 4px;
  padding: .5rem .7rem; white-space: pre-wrap; overflow-wrap: anywhere; margin: .3rem 0;
  max-height: 24rem; overflow: auto; font: 13px/1.45 ui-monospace, "SFMono-Regular", monospace; }
pre.error, .error-text { color: var(--bad); }
ol.steps { padding-left: 1.4rem; }
ol.steps > li { margin: .8rem 0; }
.step-head { font-weight: 600; }
.call { border-left: 3px solid var(--line); padding-left: .8rem; margin: .5rem 0; }
.call.refused { border-left-color: var(--bad); }
.shots { display: flex; flex-wrap: wrap; gap: .8rem; }
figure.shot { margin: 0; max-width: 100%; }
figure.shot figcaption { font-size: .85rem; }
.shot summary { list-style: none; cursor: zoom-in; display: block; }
.shot summary::-webkit-details-marker { display: none; }
.shot .frame { position: relative; display: inline-block; max-width: 100%; line-height: 0; }
.shot img { max-width: 100%; width: 40rem; height: auto; border: 1px solid var(--line);
  border-radius: 4px; }
/* Enlarged: the open <details> fills the window; a click on it closes it. */
.shot details[open] > summary { position: fixed; inset: 0; z-index: 10; cursor: zoom-out;
  background: rgb(0 0 0 / .82); display: flex; align-items: center; justify-content: center; }
.shot details[open] img { width: auto; max-width: 96vw; max-height: 94vh; border: 0; }
.mark { position: absolute; width: 26px; height: 26px; margin: -13px 0 0 -13px;
  border: 3px solid #ff1f5a; border-radius: 50%; box-sizing: border-box;
  box-shadow: 0 0 0 2px #fff, inset 0 0 0 2px #fff; pointer-events: none; }
.mark::after { content: ""; position: absolute; left: 50%; top: 50%; width: 4px; height: 4px;
  margin: -2px 0 0 -2px; border-radius: 50%; background: #ff1f5a; }
.mark.from { border-style: dashed; }
svg.drag { position: absolute; inset: 0; width: 100%; height: 100%; pointer-events: none; }
svg.drag polyline { fill: none; stroke: #ff1f5a; stroke-width: 3px;
  vector-effect: non-scaling-stroke; stroke-dasharray: 6 4; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
dl.facts.run { background: var(--panel); border: 1px solid var(--line); border-radius: 6px;
  padding: .6rem 1rem; margin: .8rem 0 0; }
.missing { color: var(--bad); font-style: italic; }
`;
