/**
 * Test-only recognisers written from the meaning of the fixture grammars, independent of the
 * grammar code: they check what generation under a grammar produced.
 */

export type Verdict = "complete" | "prefix" | "invalid";

const WS = new Set([" ", "\t", "\n"]);
const isLower = (c: string) => c >= "a" && c <= "z";
const isDigit = (c: string) => c >= "0" && c <= "9";

/**
 * arithmetic.gbnf: lines `expr "=" ws term "\n"`, where a term is a name or a number (each with
 * trailing blanks) or `"(" ws expr ")" ws`, and an expr is terms joined by `+ - * /` (no blank
 * after the operator). A counter stands for the parentheses.
 */
export function arithmetic(text: string): Verdict {
  // state: "term" (a term must start; blanks allowed when `blanksOk`), "name", "num", "after"
  let state: "term" | "name" | "num" | "after" = "term";
  let blanksOk = false;
  let depth = 0;
  let rhs = false; // after "=" on this line
  let prev = "";
  for (const c of text) {
    if (state === "name" && (isLower(c) || isDigit(c) || c === "_")) {
    } else if (state === "num" && isDigit(c)) {
    } else if (state === "term") {
      if (blanksOk && WS.has(c)) {
      } else if (isLower(c)) state = "name";
      else if (isDigit(c)) state = "num";
      else if (c === "(") {
        depth++;
        blanksOk = true;
      } else return "invalid";
    } else {
      // after a term, blanks possibly read already
      state = "after";
      if (WS.has(c)) {
      } else if ("+-*/".includes(c) && !(rhs && depth === 0)) {
        state = "term";
        blanksOk = false;
      } else if (c === ")" && depth > 0) depth--;
      else if (c === "=" && !rhs && depth === 0) {
        rhs = true;
        state = "term";
        blanksOk = true;
      } else if (rhs && depth === 0 && prev === "\n" && (isLower(c) || isDigit(c) || c === "(")) {
        // the blanks ended with the line's "\n"; a new line starts
        rhs = false;
        state = isLower(c) ? "name" : isDigit(c) ? "num" : "term";
        if (c === "(") {
          depth = 1;
          blanksOk = true;
        }
      } else return "invalid";
    }
    prev = c;
  }
  const done = rhs && depth === 0 && state !== "term" && prev === "\n";
  return done ? "complete" : "prefix";
}

const MOVE =
  "(?:(?:(?:[a-h]x)?[a-h][1-8](?:=[NBKQR])?)|(?:[NBKQR][a-h]?[1-8]?x?[a-h][1-8])|(?:O-O(?:-O)?))[+#]?";
/** chess.gbnf, complete texts. */
export const CHESS = new RegExp(`^1\\. ${MOVE} ${MOVE}\\n(?:[1-9][0-9]?\\. ${MOVE} ${MOVE}\\n)+$`);
/** list.gbnf, complete texts. */
export const LIST = /^(?:- [^\r\n\x0b\x0c\x85\u2028\u2029]+\n)+$/u;
const EN = "[a-zA-Z0-9!\"#$%&'()*+,\\-./:;<=>?@[\\\\\\]^_`{|}~]";
/** english.gbnf, complete texts. */
export const ENGLISH = new RegExp(`^${EN}+(?:[ \\t\\n]${EN}+)*$`);
const JP = "[\\u3041-\\u309f\\u30a1-\\u30ff\\u3001-\\u303e\\u4e00-\\u9fff]";
/** japanese.gbnf, complete texts. */
export const JAPANESE = new RegExp(`^${JP}+(?:[ \\t\\n]${JP}+)*$`, "u");
