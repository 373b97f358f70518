import assert from "node:assert/strict";
import {
  type Content,
  type FunctionCall,
  type GenerateContentResponse,
  GoogleGenAI,
  type Tool,
} from "@google/genai";
import { Environment, Type } from "@google/genai";
import { encodePng, toBase64 } from "../../tests/fixtures/png.ts";
import { imageTokens } from "./image.ts";
import { startSimulator } from "./mod.ts";

const PROMPT =
  'The screen is 1280x800. Click the text box at (412, 300), type "hello", then press Enter.';
const MODEL = "gemini-2.5-computer-use-preview-10-2025";
const CONFIG = {
  tools: [{ computerUse: { environment: Environment.ENVIRONMENT_BROWSER } }],
};

function client(baseUrl: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey: "g-key", httpOptions: { baseUrl } });
}

interface Episode {
  calls: FunctionCall[];
  usage: number[];
  final: string;
}

/** Plays an episode, answering each call with a screenshot inside the function response (or beside it). */
async function runEpisode(
  ai: GoogleGenAI,
  prompt: string,
  options: { stream: boolean; acknowledge?: boolean; sibling?: boolean },
): Promise<Episode> {
  const screenshot = toBase64(await encodePng(1280, 800));
  const contents: Content[] = [{ role: "user", parts: [{ text: prompt }] }];
  const episode: Episode = { calls: [], usage: [], final: "" };
  for (let turn = 0; turn < 10; turn++) {
    const request = { model: MODEL, contents, config: CONFIG };
    let response: GenerateContentResponse;
    let text: string | undefined;
    if (options.stream) {
      const chunks: GenerateContentResponse[] = [];
      for await (
        const chunk of await ai.models.generateContentStream(request)
      ) {
        chunks.push(chunk);
      }
      if (chunks[0].functionCalls) {
        assert.equal(chunks.length, 1, "a function call comes in one chunk");
      }
      response = chunks.at(-1)!;
      text = chunks.map((chunk) => chunk.text ?? "").join("");
    } else {
      response = await ai.models.generateContent(request);
      text = response.text;
    }
    episode.usage.push(response.usageMetadata!.promptTokenCount!);
    const content = response.candidates![0].content!;
    contents.push(content);
    const call = response.functionCalls?.[0];
    if (!call) {
      episode.final = text ?? "";
      return episode;
    }
    episode.calls.push(call);
    const image = { inlineData: { mimeType: "image/png", data: screenshot } };
    const acknowledgement =
      call.args?.safety_decision && options.acknowledge !== false
        ? { safety_acknowledgement: "true" }
        : {};
    contents.push({
      role: "user",
      parts: options.sibling
        ? [{
          functionResponse: {
            name: call.name,
            response: { url: "http://127.0.0.1/form", ...acknowledgement },
          },
        }, image]
        : [{
          functionResponse: {
            name: call.name,
            response: { url: "http://127.0.0.1/form", ...acknowledgement },
            parts: [image],
          },
        }],
    });
  }
  throw new Error("The episode did not end");
}

for (const stream of [false, true]) {
  Deno.test(`Gemini computer use (stream=${stream}): type_text_at then key_combination at normalised coordinates, then Done`, async () => {
    await using sim = await startSimulator();
    const episode = await runEpisode(client(sim.baseUrls.gemini), PROMPT, {
      stream,
    });
    assert.deepEqual(episode.calls.map(({ name, args }) => ({ name, args })), [
      {
        name: "type_text_at",
        args: {
          x: 322,
          y: 375,
          text: "hello",
          press_enter: false,
          clear_before_typing: true,
        },
      },
      { name: "key_combination", args: { keys: "Enter" } },
    ]);
    assert.match(episode.final, /^Done/);
    const perImage = imageTokens({ width: 1280, height: 800 }, "gemini");
    assert.ok(episode.usage[1] - episode.usage[0] >= perImage);
    assert.ok(episode.usage[2] - episode.usage[1] >= perImage);
  });
}

Deno.test("Gemini computer use normalises to 0–999 from the prompt's screen, else 1920×1080, and reads sibling screenshots", async () => {
  await using sim = await startSimulator();
  const ai = client(sim.baseUrls.gemini);
  const small = await runEpisode(
    ai,
    "The screen is 800×600. Click (799, 0), then press ctrl+a. Double-click (400, 300).",
    { stream: false, sibling: true },
  );
  assert.deepEqual(small.calls.map(({ name, args }) => ({ name, args })), [
    { name: "click_at", args: { x: 999, y: 0 } },
    { name: "key_combination", args: { keys: "Control+A" } },
    { name: "click_at", args: { x: 500, y: 500 } },
    { name: "click_at", args: { x: 500, y: 500 } },
  ]);
  // Sibling inlineData parts are screenshots too: the prompt grows by one each turn.
  const perImage = imageTokens({ width: 1280, height: 800 }, "gemini");
  assert.ok(small.usage[1] - small.usage[0] >= perImage);

  const fallback = await runEpisode(ai, "click the logo at (960, 540)", {
    stream: false,
  });
  assert.deepEqual(fallback.calls[0].args, { x: 500, y: 500 });
});

Deno.test("Gemini computer use: [confirm] asks for confirmation in safety_decision, and the response must acknowledge it", async () => {
  await using sim = await startSimulator();
  const ai = client(sim.baseUrls.gemini);
  const prompt = `[confirm] ${PROMPT}`;
  const episode = await runEpisode(ai, prompt, { stream: false });
  assert.deepEqual(episode.calls[0].args?.safety_decision, {
    decision: "require_confirmation",
    explanation: "The task asked to confirm this action before it is taken.",
  });
  assert.equal(episode.calls[1].args?.safety_decision, undefined);
  assert.match(episode.final, /^Done/);

  await assert.rejects(
    runEpisode(ai, prompt, { stream: false, acknowledge: false }),
    /safety_acknowledgement/,
  );
  const refused = sim.requests.at(-1)!;
  assert.equal(refused.status, 400);
});

Deno.test("Gemini images are billed from their size; text inline data counts as text", async () => {
  await using sim = await startSimulator();
  const ai = client(sim.baseUrls.gemini);
  const ask = async (mimeType: string, data: string) =>
    (await ai.models.generateContent({
      model: "gemini-2.5-flash",
      contents: [{
        role: "user",
        parts: [{ inlineData: { mimeType, data } }, { text: "what is this" }],
      }],
    })).usageMetadata!.promptTokenCount!;
  const png = async (w: number, h: number) => toBase64(await encodePng(w, h));
  assert.equal(
    (await ask("image/png", await png(1920, 1080))) -
      (await ask("image/png", await png(300, 200))),
    1548 - 258,
  );
  const details = (await ai.models.generateContent({
    model: "gemini-2.5-flash",
    contents: [{
      role: "user",
      parts: [{
        inlineData: { mimeType: "image/png", data: await png(1920, 1080) },
      }, {
        text: "abcd",
      }],
    }],
  })).usageMetadata!.promptTokensDetails;
  assert.deepEqual(details, [
    { modality: "TEXT", tokenCount: 1 },
    { modality: "IMAGE", tokenCount: 1548 },
  ]);
  const text = btoa("x".repeat(40_000));
  assert.ok((await ask("text/plain", text)) >= 10_000);
});

Deno.test("Gemini computer use never calls an excluded predefined function, unless the request declares its own of that name", async () => {
  await using sim = await startSimulator();
  const ai = client(sim.baseUrls.gemini);
  const contents: Content[] = [{ role: "user", parts: [{ text: PROMPT }] }];
  const names = async (tools: Tool[]) => {
    const called: string[] = [];
    const history = [...contents];
    for (let turn = 0; turn < 5; turn++) {
      const response = await ai.models.generateContent({
        model: MODEL,
        contents: history,
        config: { tools },
      });
      const call = response.functionCalls?.[0];
      if (!call) break;
      called.push(call.name!);
      history.push(response.candidates![0].content!, {
        role: "user",
        parts: [{ functionResponse: { name: call.name, response: {} } }],
      });
    }
    return called;
  };
  const excluded = {
    computerUse: {
      environment: Environment.ENVIRONMENT_BROWSER,
      excludedPredefinedFunctions: ["key_combination"],
    },
  };
  assert.deepEqual(await names([excluded]), ["type_text_at"]);
  assert.deepEqual(
    await names([excluded, {
      functionDeclarations: [{
        name: "key_combination",
        parameters: { type: Type.OBJECT, properties: {} },
      }],
    }]),
    ["type_text_at", "key_combination"],
  );
});
