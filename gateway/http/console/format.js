// Numbers, money, times and limits as the pages show them.

/** USD with enough digits for small amounts. */
export function usd(value) {
  if (value === null || value === undefined) return "—";
  if (value < 1) return `$${value.toFixed(6)}`;
  // Cents where the amount is whole cents; else to the micro-USD, so a
  // balance a few calls below $10 never reads "$10.00".
  const cents = value.toFixed(2);
  return Math.abs(Number(cents) - value) < 5e-7
    ? `$${cents}`
    : `$${value.toFixed(6).replace(/0+$/, "")}`;
}

/** A count with separators. */
export function count(value) {
  return (value ?? 0).toLocaleString("en-US");
}

/** Milliseconds, or a dash. */
export function ms(value) {
  return value === null || value === undefined ? "—" : `${count(value)} ms`;
}

/** A percentage; a dash where there were no requests to take it of. */
export function percent(value, requests) {
  if (!requests) return "—";
  return `${((value ?? 0) * 100).toFixed(1)}%`;
}

/** A time in UTC, to the second. */
export function time(epochMs) {
  return `${
    new Date(epochMs).toISOString().replace("T", " ").slice(0, 19)
  } UTC`;
}

/** The name a model or provider of the usage report is shown under. */
export function groupLabel(name) {
  return name === "-" ? "refused before routing" : name;
}

/** Axis and legend format for USD. */
export function usdTick(value) {
  return value === 0 ? "$0" : `$${Number(value.toPrecision(2))}`;
}

/** A caller's limits in words, one line each (none: "No limits"). */
export function limitLines(limits) {
  if (!limits) return ["No limits"];
  const lines = [];
  const per = (n, unit) => `${count(n)} ${unit}${n === 1 ? "" : "s"}/min`;
  if (limits.rpm !== undefined) lines.push(per(limits.rpm, "request"));
  if (limits.tpm !== undefined) lines.push(per(limits.tpm, "token"));
  if (limits.spend) {
    lines.push(`Budget ${usd(limits.spend.amount)} per ${limits.spend.period}`);
  }
  if (limits.models) lines.push(`Models: ${limits.models.join(", ")}`);
  if (limits.expiresAt) {
    lines.push(`Expires ${time(Date.parse(limits.expiresAt))}`);
  }
  return lines.length ? lines : ["No limits"];
}
