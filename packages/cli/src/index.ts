/**
 * @module minfer
 */
export { main } from "./main.js";
