/**
 * JSON Schema → GBNF, for output guaranteed to be a JSON document valid under a schema.
 *
 * Supported: `type` (one or an array), `properties` / `required` / `additionalProperties` (false, true or a
 * schema), `enum`, `const`, `anyOf`, `oneOf` (as anyOf), `allOf` (merged), local `$ref` into `$defs` /
 * `definitions` (recursion allowed), `items` / `prefixItems` / `additionalItems` / `minItems` / `maxItems`,
 * `minLength` / `maxLength`, `format` date / time / date-time / uuid, integer `minimum` / `maximum` /
 * `exclusiveMinimum` / `exclusiveMaximum`, OpenAPI `nullable`; annotations are ignored. Anything else is
 * refused (SCHEMA_UNSUPPORTED, naming the keyword and its JSON pointer).
 *
 * The language is a documented subset of the valid documents:
 * - whitespace: none, except an optional single space after `,` and `:` (option `whitespace: "none"`: none);
 * - object members in the schema's order (declared properties as listed, required-but-undeclared names in
 *   `required`'s order, then additional members); `additionalProperties` left out beside `properties`
 *   allows no extra members (with neither keyword, any object is allowed);
 *   extra members' keys are written without escapes;
 * - a tuple (`prefixItems`) without `items` allows no further elements;
 * - a schema without `type` is taken to be of the types its keywords belong to (`properties` → object, ...);
 * - integers are written as `0` or `-?[1-9][0-9]*` (not `1.0` or `1e2`); `enum` / `const` values as
 *   JSON.stringify writes them;
 * - strings escape only as JSON allows and never a UTF-16 surrogate (`\uD83D`): astral characters are raw;
 * - maxLength / maxItems above 2000 are lowered to 2000 (minLength / minItems above it are refused);
 * - the formats as formats.ts says (no leap seconds, `T` separator, fractions of at most 9 digits, no urn:uuid).
 * oneOf is treated as anyOf: a document matching several branches is accepted though oneOf would reject it.
 */

export type { JsonSchemaToGbnfOptions } from "./convert.js";
export { jsonSchemaToGbnf } from "./convert.js";
export { SchemaError } from "./errors.js";
