/**
 * GBNF for the supported string formats (RFC 3339 dates and times, RFC 4122 UUIDs), each as the body of a
 * JSON string (the quotes are added by the caller). What is written is a subset of what the formats allow:
 * - date: `YYYY-MM-DD`, with each month's real length and 29 February only in leap years.
 * - time: `HH:MM:SS`, an optional fraction of 1–9 digits, then `Z` or `±HH:MM` (no leap second 60).
 * - date-time: a date, `T`, a time.
 * - uuid: 8-4-4-4-12 hex digits of either case (no `urn:uuid:` prefix).
 */

import { alt, seq } from "./gbnf.js";

/** The format names this converter writes. */
export const SUPPORTED_FORMATS = ["date", "time", "date-time", "uuid"] as const;
export type SupportedFormat = (typeof SUPPORTED_FORMATS)[number];

const DAY_28 = alt('"0" [1-9]', '"1" [0-9]', '"2" [0-8]');
const DAY_30 = alt(DAY_28, '"29"', '"30"');
const DAY_31 = alt(DAY_30, '"31"');
/** Multiples of 4 as two digits: 00, 04, 08, 12, ... 96. */
const MULTIPLE_OF_4 = alt("[02468] [048]", "[13579] [26]");
/** Leap years: YY then a non-zero multiple of 4, or a multiple of 4 then 00. */
const LEAP_YEAR = alt(
  seq("[0-9]{2}", `("0" [48] | [2468] [048] | [13579] [26])`),
  seq(`(${MULTIPLE_OF_4})`, '"00"'),
);

const DATE = alt(
  seq("[0-9]{4}", '"-"', '("01" | "03" | "05" | "07" | "08" | "10" | "12")', '"-"', `(${DAY_31})`),
  seq("[0-9]{4}", '"-"', '("04" | "06" | "09" | "11")', '"-"', `(${DAY_30})`),
  seq("[0-9]{4}", '"-02-"', `(${DAY_28})`),
  seq(`(${LEAP_YEAR})`, '"-02-29"'),
);

const HOUR = '([01] [0-9] | "2" [0-3])';
const MINUTE = "[0-5] [0-9]";
const TIME = seq(
  HOUR,
  '":"',
  MINUTE,
  '":"',
  MINUTE,
  '("." [0-9]{1,9})?',
  `("Z" | [-+] ${HOUR} ":" ${MINUTE})`,
);

const UUID = seq(
  "[0-9a-fA-F]{8}",
  '"-"',
  "[0-9a-fA-F]{4}",
  '"-"',
  "[0-9a-fA-F]{4}",
  '"-"',
  "[0-9a-fA-F]{4}",
  '"-"',
  "[0-9a-fA-F]{12}",
);

/** The GBNF body (between the quotes) of a string in `format`; date-time names the date and time rules. */
export function formatBody(format: SupportedFormat, name: (f: SupportedFormat) => string): string {
  switch (format) {
    case "date":
      return DATE;
    case "time":
      return TIME;
    case "date-time":
      return seq(name("date"), '"T"', name("time"));
    case "uuid":
      return UUID;
  }
}
