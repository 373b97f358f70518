/**
 * The conventions the gateway speaks, by route.
 *
 * @module
 */

/** The routes a model can be listed on. */
export type RouteName = "chat" | "messages" | "responses" | "gemini";
