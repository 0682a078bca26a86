/**
 * JSON Schema → GBNF, for output guaranteed to be a JSON document valid under a schema.
 *
 * Supported: `type` (one or an array), `properties` / `required` / `additionalProperties` (false, true or a
 * schema), `enum`, `const`, `anyOf`, `oneOf` (when its branches cannot overlap: see one-of.ts), `allOf`
 * (merged), local `$ref` into `$defs` / `definitions` (recursion allowed), `items` / `prefixItems` /
 * `additionalItems` / `minItems` / `maxItems`, `minLength` / `maxLength`, `format` date / time / date-time /
 * uuid, `minimum` / `maximum` / `exclusiveMinimum` / `exclusiveMaximum` on integers and numbers, OpenAPI
 * `nullable`; annotations are ignored. Anything else is refused (SCHEMA_UNSUPPORTED, naming the keyword and
 * its JSON pointer), and so is a `oneOf` whose branches may overlap (a grammar cannot say "exactly one").
 *
 * The language is a documented subset of the valid documents:
 * - whitespace: none, except an optional single space after `,` and `:` (option `whitespace: "none"`: none);
 * - object members in the schema's order (declared properties as listed, required-but-undeclared names in
 *   `required`'s order, then additional members); `additionalProperties` left out beside `properties`
 *   allows no extra members (with neither keyword, any object is allowed);
 *   extra members' keys are written without escapes;
 * - a tuple (`prefixItems`) without `items` allows no further elements;
 * - a schema without `type` allows every type; each keyword constrains only values of its own type
 *   (`{"minimum": 3}` allows strings, and numbers of at least 3);
 * - numbers and integers as llama.cpp writes them: an integral part of `0` or at most 16 digits, a fraction
 *   of at most 16 digits, an exponent whose digits follow the integral part's rule (`-0` is an integer;
 *   integers are never `1.0` or `1e2`); `enum` / `const` values as JSON.stringify writes them;
 * - a number with bounds is a plain decimal (no exponent) compared exactly with the bound; an exclusive
 *   bound is taken as the next double beyond it (see decimal-range.ts);
 * - strings escape only as JSON allows and never a UTF-16 surrogate (`\uD83D`): astral characters are raw;
 * - maxLength / maxItems above 2000 are lowered to 2000 (minLength / minItems above it are refused);
 * - the formats as formats.ts says (no leap seconds, `T` separator, fractions of at most 9 digits, no urn:uuid).
 * A schema nesting more than 128 objects and arrays, a conversion expanding `$ref`s in place past its bounds,
 * or a grammar past the grammar bounds (grammar/limits.ts) is refused with SCHEMA_UNSUPPORTED.
 */

export type { JsonSchemaToGbnfOptions } from "./convert.js";
export { jsonSchemaToGbnf } from "./convert.js";
export { SchemaError } from "./errors.js";
