// Test-only (not exported): seeded random strings that stress tokenizers.

/** A small seeded generator (mulberry32). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABETS = [
  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
  "0123456789",
  " ",
  "   \t\n\r\n  ",
  ".,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`",
  "'s 're 've 'll 'd 'm 't 'S 'RE",
  "äöüßéèêàçñøåæœ",
  "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
  "αβγδεζηθικλμνξοπρστυφχψω",
  "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
  "こんにちはカタカナひらがな",
  "안녕하세요한국어",
  "مرحبا بالعالم",
  "שלום עולם",
  "नमस्ते दुनिया",
  "😀😂🥲👍🏽🇩🇪👨‍👩‍👧‍👦🦙",
  "\u00a0\u2003\u3000\u200b\u2028\ufeff",
  "\u0301\u0308\u0327",
];

/** A random string of up to `maxLen` UTF-16 units mixing scripts, emoji, whitespace runs and punctuation. */
export function randomText(rand: () => number, maxLen = 64): string {
  const len = Math.floor(rand() * maxLen);
  let s = "";
  while (s.length < len) {
    const alphabet = ALPHABETS[Math.floor(rand() * ALPHABETS.length)]!;
    const chars = [...alphabet];
    const run = 1 + Math.floor(rand() * 8);
    for (let i = 0; i < run; i++) s += chars[Math.floor(rand() * chars.length)];
  }
  return s;
}
