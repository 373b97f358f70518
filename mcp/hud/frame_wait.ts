/**
 * One wait for a control session's next frame, with its time limits: a
 * frame begun and not finished, and a session that begins none.
 *
 * @module
 */
import type { FrameRead, FrameReader } from "./framing.ts";

/** The time limits of one wait for a frame. */
export interface WaitLimits {
  /** A frame in progress at two ticks of this in a row closes the connection (0: none). */
  frameTimeoutMs: number;
  /** No frame begun within this closes the connection unless exempt (0: none). */
  idleTimeoutMs: number;
  /** Whether the session may idle for good (the harness, or a session holding a task). */
  exempt: () => boolean;
}

/**
 * The next frame; `close` is called (and the read ends) when a frame was in
 * progress at two ticks of the frame time-out in a row, or when none began
 * within the idle time-out and the session is not exempt.
 *
 * @param reader The connection's frame reader.
 * @param close Closes the connection (and ends the reader's wait).
 * @param limits The time limits.
 * @returns The frame, or `end` once closed.
 */
export async function readWithin(
  reader: FrameReader,
  close: () => void,
  limits: WaitLimits,
): Promise<FrameRead> {
  const { frameTimeoutMs, idleTimeoutMs, exempt } = limits;
  let held = 0;
  const frameTimer = frameTimeoutMs > 0
    ? setInterval(() => {
      const now = reader.pendingBytes;
      if (now > 0 && held > 0) close();
      held = now;
    }, frameTimeoutMs)
    : undefined;
  const idleTimer = idleTimeoutMs > 0
    ? setTimeout(() => {
      if (reader.pendingBytes === 0 && !exempt()) close();
    }, idleTimeoutMs)
    : undefined;
  try {
    return await reader.read();
  } catch {
    return { kind: "end" };
  } finally {
    clearInterval(frameTimer);
    clearTimeout(idleTimer);
  }
}
