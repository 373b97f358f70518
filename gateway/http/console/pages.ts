/**
 * The operator console (`/console`, admin token) and a caller's own page
 * (`/activity`, the caller's key): static pages the gateway serves itself,
 * charts by uPlot included, so they work offline. The pages hold no data:
 * they sign in within the tab (sessionStorage) and read the admin API or the
 * caller API with that credential.
 *
 * @module
 */
import { Hono } from "hono";
import { UPLOT_CSS, UPLOT_JS } from "./_uplot.ts";
import activityJs from "./activity.js" with { type: "text" };
import chartsJs from "./charts.js" with { type: "text" };
import consoleJs from "./console.js" with { type: "text" };
import consoleCallersJs from "./console_callers.js" with { type: "text" };
import consoleCatalogJs from "./console_catalog.js" with { type: "text" };
import consoleKeysJs from "./console_keys.js" with { type: "text" };
import consoleShellJs from "./console_shell.js" with { type: "text" };
import consoleTracesJs from "./console_traces.js" with { type: "text" };
import consoleUsageJs from "./console_usage.js" with { type: "text" };
import csvJs from "./csv.js" with { type: "text" };
import domJs from "./dom.js" with { type: "text" };
import formatJs from "./format.js" with { type: "text" };
import sessionJs from "./session.js" with { type: "text" };
import tracesJs from "./traces.js" with { type: "text" };
import styleCss from "./style.css" with { type: "text" };

const SECURITY_HEADERS = {
  // Scripts only from this origin (no inline script), calls only to it, and
  // no framing: a token typed here cannot be read by another origin's page.
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; " +
    "frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

function page(title: string, script: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="/console/assets/uplot.css">
<link rel="stylesheet" href="/console/assets/style.css">
<script src="/console/assets/uplot.js"></script>
<script type="module" src="${script}"></script>
</head>
<body><div id="app"></div></body>
</html>
`;
}

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

const ASSETS: Record<string, { body: string; type: string }> = {
  "uplot.js": { body: UPLOT_JS, type: JS },
  "uplot.css": { body: UPLOT_CSS, type: CSS },
  "style.css": { body: styleCss, type: CSS },
  "session.js": { body: sessionJs, type: JS },
  "dom.js": { body: domJs, type: JS },
  "format.js": { body: formatJs, type: JS },
  "charts.js": { body: chartsJs, type: JS },
  "traces.js": { body: tracesJs, type: JS },
  "csv.js": { body: csvJs, type: JS },
  "console.js": { body: consoleJs, type: JS },
  "console_shell.js": { body: consoleShellJs, type: JS },
  "console_usage.js": { body: consoleUsageJs, type: JS },
  "console_callers.js": { body: consoleCallersJs, type: JS },
  "console_catalog.js": { body: consoleCatalogJs, type: JS },
  "console_keys.js": { body: consoleKeysJs, type: JS },
  "console_traces.js": { body: consoleTracesJs, type: JS },
  "activity.js": { body: activityJs, type: JS },
};

/**
 * The page routes: `GET /console`, `GET /activity` and their assets under
 * `/console/assets/`.
 *
 * @returns A Hono app to mount at the root.
 *
 * @example
 * ```ts
 * import { consolePages } from "./pages.ts";
 * import assert from "node:assert/strict";
 *
 * const page = await consolePages().request("/console");
 * assert.match(page.headers.get("content-security-policy") ?? "", /script-src 'self'/);
 * ```
 */
export function consolePages(): Hono {
  const pages = new Hono();
  const html = (body: string) =>
    new Response(body, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        ...SECURITY_HEADERS,
      },
    });
  const consoleHtml = page(
    "mcpkit gateway console",
    "/console/assets/console.js",
  );
  const activityHtml = page(
    "Your gateway activity",
    "/console/assets/activity.js",
  );
  pages.get("/console", () => html(consoleHtml));
  pages.get("/activity", () => html(activityHtml));
  pages.get("/console/assets/:name", (c) => {
    const name = c.req.param("name");
    // Only the table's own names: `__proto__` or `constructor` are not assets.
    const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (!asset) return c.notFound();
    return new Response(asset.body, {
      headers: {
        "content-type": asset.type,
        "cache-control": "public, max-age=300",
        ...SECURITY_HEADERS,
      },
    });
  });
  return pages;
}
