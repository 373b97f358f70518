/**
 * One task of the report: its trajectory step by step (model text, tool
 * calls with arguments, results, screenshots, refusals, safety checks),
 * reward and subscores, tokens, cost and the gateway trace id.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type {
  TrajectoryImage,
  TrajectoryStep,
  TrajectoryToolCall,
} from "../agents/trajectory.ts";
import type { EvalResult } from "../run/result.ts";
import { BASE64, imageExt, type ImageReader, SHA256 } from "./images.ts";
import { esc, json, num, statusOf, usd } from "./html.ts";
import { type ShotAction, shotAction, shotFigure } from "./shot.ts";
import { countsAsFailure } from "../run/stats.ts";

/** What a task's section needs of the report's options. */
export interface TaskSectionOptions {
  /** Reads a stored image; absent: stored images show as missing. */
  readImage?: ImageReader;
}

export function imageTag(
  image: TrajectoryImage | undefined,
  alt: string,
  options: TaskSectionOptions,
  action?: ShotAction,
): string {
  if (!image || typeof image !== "object") return "";
  const type = String(image.mimeType ?? "");
  const ext = imageExt(type);
  if (!ext) {
    return `<p class="missing">An image of type ${
      esc(type.slice(0, 100))
    } (not shown)</p>`;
  }
  let data: string | undefined;
  if ("data" in image) {
    data = typeof image.data === "string" && BASE64.test(image.data)
      ? image.data
      : undefined;
  } else if (typeof image.sha256 === "string" && SHA256.test(image.sha256)) {
    const bytes = options.readImage?.(image.sha256, ext);
    if (bytes) data = Buffer.from(bytes).toString("base64");
  }
  if (!data) {
    return `<p class="missing">${esc(alt)}: the image is missing${
      "sha256" in image ? ` (${esc(String(image.sha256).slice(0, 64))})` : ""
    }</p>`;
  }
  return shotFigure(`data:${type};base64,${data}`, data, alt, action);
}

export function toolCall(
  call: TrajectoryToolCall,
  where: string,
  options: TaskSectionOptions,
): string {
  const parts = [
    `<div class="call${call.refused ? " refused" : ""}">`,
    `<p><strong>Tool call</strong> <code>${esc(call.name)}</code>${
      call.refused
        ? ' <span class="badge error">refused: not a tool of this task</span>'
        : ""
    }</p>`,
    `<pre aria-label="arguments">${esc(json(call.arguments))}</pre>`,
  ];
  const checks = Array.isArray(call.safety_checks) ? call.safety_checks : [];
  if (checks.length > 0) {
    parts.push(
      `<p><strong>Safety checks</strong> (acknowledged)</p><ul>${
        checks.map((check) =>
          `<li><code>${esc(check?.code ?? check?.id)}</code> ${
            esc(check?.message ?? "")
          }</li>`
        ).join("")
      }</ul>`,
    );
  }
  const result = call.result;
  if (!result || typeof result !== "object") {
    parts.push(
      `<p class="missing">No result: the run failed during this call</p>`,
    );
  } else {
    parts.push(
      `<p><strong>Result</strong>${
        result.is_error ? ' <span class="badge error">error</span>' : ""
      }</p>`,
    );
    if (result.text) {
      parts.push(
        `<pre${result.is_error ? ' class="error"' : ""}>${
          esc(result.text)
        }</pre>`,
      );
    }
    const images = Array.isArray(result.images) ? result.images : [];
    if (images.length > 0) {
      parts.push(
        `<div class="shots">${
          images.map((image, i) =>
            imageTag(
              image,
              `${where}, screenshot ${i + 1}`,
              options,
              shotAction(String(call.name), call.arguments),
            )
          ).join("")
        }</div>`,
      );
    }
  }
  parts.push("</div>");
  return parts.join("\n");
}

export function stepItem(
  step: TrajectoryStep,
  task: number,
  options: TaskSectionOptions,
): string {
  const calls = Array.isArray(step.tool_calls) ? step.tool_calls : [];
  const where = `Task ${task}, step ${num(step.step)}`;
  return `<li id="task-${task}-step-${num(step.step)}">
<p class="step-head">Model call ${num(step.step)} <span class="muted">· HTTP ${
    num(step.status)
  } · ${num(step.tokens?.input)} in / ${
    num(step.tokens?.output)
  } out tokens · ${usd(step.cost_usd)}${
    step.replayed ? " · replayed from a recording" : ""
  }</span></p>
${step.text ? `<pre aria-label="model text">${esc(step.text)}</pre>` : ""}
${
    calls.length === 0 && !step.text
      ? '<p class="muted">(no text, no tool calls)</p>'
      : ""
  }
${
    calls.map((call, i) => toolCall(call, `${where}, call ${i + 1}`, options))
      .join("\n")
  }
</li>`;
}

/** A run's reward as the report states it: an error is no reward. */
function rewardText(result: EvalResult): string {
  if (result.error) {
    return countsAsFailure(result)
      ? "none: the run ended in an error after the agent acted, scored 0 as a failure"
      : "none: the run ended in an error before the agent acted, not scored (run again by --resume)";
  }
  return `${num(result.reward).toFixed(3)}${
    result.done === false ? " (not done)" : ""
  }`;
}

export function taskSection(
  result: EvalResult,
  options: TaskSectionOptions,
): string {
  const status = statusOf(result);
  const task = num(result.task);
  const trajectory = result.trajectory;
  const subscores = Array.isArray(result.subscores) ? result.subscores : [];
  const checks = Array.isArray(result.safety_checks)
    ? result.safety_checks
    : [];
  const facts: [string, string][] = [
    ["scenario", `<code>${esc(result.scenario)}</code>`],
    ["arguments", `<code>${esc(JSON.stringify(result.args ?? {}))}</code>`],
    ["reward", rewardText(result)],
    ...(result.content !== undefined
      ? [["evaluation", esc(result.content)] as [string, string]]
      : []),
    ...(result.error
      ? [["error", `<span class="error-text">${esc(result.error)}</span>`] as [
        string,
        string,
      ]]
      : []),
    ...(num(result.repeat) > 0
      ? [["repeat", String(num(result.repeat))] as [string, string]]
      : []),
    ...(num(result.attempts) > 1
      ? [["attempts", String(num(result.attempts))] as [string, string]]
      : []),
    ...(result.error_kind
      ? [["error kind", esc(result.error_kind)] as [string, string]]
      : []),
    ["model calls", String(num(result.steps))],
    [
      "tokens",
      `${num(result.tokens?.input)} in / ${num(result.tokens?.output)} out`,
    ],
    [
      "cost",
      `${usd(result.cost_usd)}${
        result.cost_source === "gateway_traces"
          ? " (read from the gateway's traces: a call was cut off)"
          : ""
      }`,
    ],
    ["convention", esc(result.convention)],
    ["trace id", `<code>${esc(result.trace_id)}</code>`],
    ["duration", `${(num(result.duration_ms) / 1000).toFixed(1)} s`],
    ["refused tool calls", String(num(result.refused_tool_calls))],
    ...(num(result.excess_tool_calls) > 0
      ? [[
        "tool calls past the cap",
        String(num(result.excess_tool_calls)),
      ] as [string, string]]
      : []),
    ["safety checks", String(checks.length)],
  ];
  const subscoreTable = subscores.length === 0 ? "" : `<h3>Subscores</h3>
<table><thead><tr><th scope="col">name</th><th scope="col" class="n">weight</th><th scope="col" class="n">value</th></tr></thead><tbody>
${
    subscores.map((s) =>
      `<tr><td>${esc(s?.name)}</td><td class="n">${
        num(s?.weight)
      }</td><td class="n">${num(s?.value).toFixed(3)}</td></tr>`
    ).join("\n")
  }
</tbody></table>`;
  const prompt = Array.isArray(trajectory?.prompt) ? trajectory.prompt : [];
  const steps = Array.isArray(trajectory?.steps) ? trajectory.steps : [];
  const promptHtml = prompt.length === 0 ? "" : `<h3>Prompt</h3>
${
    prompt.map((message, i) =>
      `<p class="muted">${esc(message?.role)}</p>${
        message?.image
          ? imageTag(
            message.image,
            `Task ${task}, prompt image ${i + 1}`,
            options,
          )
          : `<pre>${esc(message?.text ?? "")}</pre>`
      }`
    ).join("\n")
  }`;
  const stepsHtml = trajectory
    ? `<h3>Trajectory</h3>${
      steps.length === 0
        ? '<p class="muted">No model call was made.</p>'
        : `<ol class="steps">${
          steps.map((step) => stepItem(step, task, options)).join("\n")
        }</ol>`
    }`
    : result.error
    ? '<p class="muted">No trajectory: the run ended before its agent started.</p>'
    : '<p class="muted">No trajectory: this result was written by a runner that did not keep one.</p>';
  return `<article class="task ${status}${
    result.error ? " errored" : ""
  }" id="task-${task}">
<details open>
<summary><strong>Task ${task}</strong> <code>${esc(result.scenario)}</code>
${
    result.error
      ? `<span class="badge error">error · ${
        countsAsFailure(result) ? "scored 0" : "not scored"
      }</span>`
      : `<span class="badge reward">reward ${
        num(result.reward).toFixed(3)
      }</span>`
  }
<span class="muted">${num(result.steps)} call(s) · ${
    usd(result.cost_usd)
  }</span></summary>
<div class="body">
<dl class="facts">
${facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join("\n")}
</dl>
${subscoreTable}
${promptHtml}
${stepsHtml}
</div>
</details>
</article>`;
}
