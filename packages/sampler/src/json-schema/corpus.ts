/**
 * Test corpus: schemas with hand-written documents the grammar must accept (`valid`: all valid per ajv) and
 * reject (`invalid`: all invalid per ajv, or not JSON). Used by convert.test.ts.
 */

export interface CorpusEntry {
  readonly name: string;
  readonly schema: unknown;
  readonly valid: readonly string[];
  readonly invalid: readonly string[];
  /** The ajv dialect to check with (draft-07 for the old tuple form `items: [...]`). */
  readonly draft?: "2020" | "07";
}

const node = {
  type: "object",
  properties: {
    value: { type: "integer" },
    children: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 3 },
  },
  required: ["value"],
};

export const CORPUS: readonly CorpusEntry[] = [
  {
    name: "nested objects",
    schema: {
      type: "object",
      properties: {
        name: { type: "string", minLength: 1, maxLength: 20 },
        age: { type: "integer", minimum: 0, maximum: 150 },
        address: {
          type: "object",
          properties: {
            street: { type: "string" },
            city: { type: "string" },
            zip: { type: "string", minLength: 5, maxLength: 5 },
          },
          required: ["street", "city"],
        },
        tags: { type: "array", items: { type: "string" }, maxItems: 3 },
      },
      required: ["name", "age"],
      additionalProperties: false,
    },
    valid: [
      '{"name":"Ann","age":31}',
      '{"name": "Ann", "age": 0, "address": {"street": "Main", "city": "Oslo", "zip": "01234"}}',
      '{"name":"é","age":150,"tags":[]}',
      '{"name":"x","age":7,"address":{"street":"","city":""},"tags":["a","b","c"]}',
    ],
    invalid: [
      '{"age":31}',
      '{"name":"Ann"}',
      '{"name":"","age":31}',
      '{"name":"Ann","age":151}',
      '{"name":"Ann","age":-1}',
      '{"name":"Ann","age":31,"extra":1}',
      '{"name":"Ann","age":31,"address":{"street":"Main"}}',
      '{"name":"Ann","age":31,"address":{"street":"M","city":"O","zip":"123"}}',
      '{"name":"Ann","age":31,"tags":["a","b","c","d"]}',
      '{"name":"Ann","age":3.5}',
    ],
  },
  {
    name: "prefixItems with items, minItems and maxItems",
    schema: {
      type: "array",
      prefixItems: [{ type: "string" }, { type: "integer" }, { type: "boolean" }],
      items: { type: "null" },
      minItems: 2,
      maxItems: 5,
    },
    valid: ['["a",1]', '["a",1,true]', '["a", 1, false, null, null]'],
    invalid: ['["a"]', "[]", '["a","b"]', '["a",1,true,null,null,null]', '["a",1,true,1]', "[1,1]"],
  },
  {
    name: "prefixItems without items (a closed tuple)",
    schema: { type: "array", prefixItems: [{ type: "integer" }, { enum: ["x", "y"] }] },
    valid: ["[]", "[1]", '[1,"y"]'],
    invalid: ['[1,"z"]', '["x"]'],
  },
  {
    name: "the draft-07 tuple form",
    draft: "07",
    schema: {
      type: "array",
      items: [{ type: "string" }, { type: "integer" }],
      additionalItems: { type: "boolean" },
    },
    valid: ["[]", '["a"]', '["a",2,true,false]'],
    invalid: ["[2]", '["a","b"]', '["a",2,3]'],
  },
  {
    name: "items with bounds",
    schema: { type: "array", items: { type: "integer", minimum: -3, maximum: 3 }, minItems: 2, maxItems: 4 },
    valid: ["[-3,3]", "[0,1,2,-1]"],
    invalid: ["[1]", "[1,2,3,4,5]", "[4,0]", "[-4,0]", "[1.5,0]"],
  },
  {
    name: "enum of mixed values",
    schema: { enum: ["red", "green", 3, null, true, { a: [1, 2] }, [1, "x"]] },
    valid: ['"red"', "3", "null", "true", '{"a":[1,2]}', '[1,"x"]'],
    invalid: ['"blue"', "false", "4", '{"a":[1]}', '["x",1]'],
  },
  {
    name: "enum filtered by type",
    schema: { type: "string", enum: ["a", "b", 1] },
    valid: ['"a"', '"b"'],
    invalid: ["1", '"c"'],
  },
  {
    name: "const discriminators",
    schema: {
      type: "object",
      properties: { kind: { const: "circle" }, r: { type: "number" } },
      required: ["kind", "r"],
    },
    valid: ['{"kind":"circle","r":2.5}', '{"kind":"circle","r":-1e-3}', '{"kind":"circle","r":0}'],
    invalid: ['{"kind":"square","r":1}', '{"kind":"circle"}', '{"kind":"circle","r":"1"}'],
  },
  {
    name: "a recursive tree through $defs",
    schema: { $defs: { node }, $ref: "#/$defs/node" },
    valid: ['{"value":1}', '{"value":1,"children":[{"value":2},{"value":3,"children":[]}]}'],
    invalid: [
      '{"children":[]}',
      '{"value":1,"children":[{"value":"2"}]}',
      '{"value":1,"children":[{},{},{},{}]}',
    ],
  },
  {
    name: "a linked list through definitions and anyOf",
    schema: {
      definitions: {
        cell: {
          type: "object",
          properties: {
            head: { type: "string" },
            tail: { anyOf: [{ $ref: "#/definitions/cell" }, { type: "null" }] },
          },
          required: ["head", "tail"],
        },
      },
      $ref: "#/definitions/cell",
    },
    valid: ['{"head":"a","tail":null}', '{"head":"a","tail":{"head":"b","tail":null}}'],
    invalid: ['{"head":"a"}', '{"head":"a","tail":{"head":"b"}}', '{"head":"a","tail":1}'],
  },
  {
    name: "recursion through the root",
    schema: {
      type: "object",
      properties: { name: { type: "string" }, sub: { $ref: "#" } },
      required: ["name"],
    },
    valid: ['{"name":"a"}', '{"name":"a","sub":{"name":"b","sub":{"name":"c"}}}'],
    invalid: ['{"name":"a","sub":{}}', '{"sub":{"name":"b"}}'],
  },
  {
    name: "anyOf of different types",
    schema: {
      anyOf: [
        { type: "string", maxLength: 4 },
        { type: "integer", minimum: 10, maximum: 20 },
        { type: "array", items: { type: "boolean" }, maxItems: 2 },
      ],
    },
    valid: ['"abcd"', "10", "20", "[]", "[true,false]"],
    invalid: ['"abcde"', "9", "21", "[true,true,true]", "null", "[1]"],
  },
  {
    name: "oneOf with a discriminator",
    schema: {
      oneOf: [
        {
          type: "object",
          properties: { t: { const: "a" }, x: { type: "integer" } },
          required: ["t", "x"],
          additionalProperties: false,
        },
        {
          type: "object",
          properties: { t: { const: "b" }, y: { type: "string" } },
          required: ["t"],
          additionalProperties: false,
        },
      ],
    },
    valid: ['{"t":"a","x":1}', '{"t":"b"}', '{"t":"b","y":""}'],
    invalid: ['{"t":"a"}', '{"t":"c"}', '{"t":"a","y":""}', '{"t":"b","x":1}'],
  },
  {
    name: "anyOf beside properties (each branch conjoined)",
    schema: {
      type: "object",
      properties: { a: { type: "integer" }, b: { type: "string" } },
      anyOf: [{ required: ["a"] }, { required: ["b"] }],
      additionalProperties: false,
    },
    valid: ['{"a":1}', '{"b":"x"}', '{"a":1,"b":"x"}'],
    invalid: ["{}", '{"a":"x"}', '{"c":1}'],
  },
  {
    name: "allOf merging object schemas",
    schema: {
      allOf: [
        { type: "object", properties: { id: { type: "integer", minimum: 1 } }, required: ["id"] },
        { properties: { name: { type: "string", maxLength: 8 }, id: { maximum: 99 } }, required: ["name"] },
      ],
    },
    valid: ['{"id":1,"name":""}', '{"id":99,"name":"abcdefgh"}'],
    invalid: [
      '{"id":0,"name":""}',
      '{"id":100,"name":""}',
      '{"id":5}',
      '{"name":"x"}',
      '{"id":5,"name":"abcdefghi"}',
    ],
  },
  {
    name: "allOf tightening bounds from both sides",
    schema: {
      type: "array",
      items: {
        allOf: [
          { type: "integer", minimum: 3, maximum: 50 },
          { type: ["integer", "string"], minimum: 10, maximum: 20 },
        ],
      },
      allOf: [
        { minItems: 1, maxItems: 4 },
        { minItems: 2, maxItems: 3 },
      ],
    },
    valid: ["[10,20]", "[15,11,12]"],
    invalid: ["[10]", "[10,11,12,13]", "[9,10]", "[10,21]", "[3,4]", '["x",10]'],
  },
  {
    name: "allOf with a $ref base and formats",
    schema: {
      $defs: {
        base: { type: "object", properties: { id: { type: "string", format: "uuid" } }, required: ["id"] },
      },
      allOf: [
        { $ref: "#/$defs/base" },
        { properties: { created: { type: "string", format: "date" } }, required: ["created"] },
      ],
    },
    valid: ['{"id":"123e4567-e89b-12d3-a456-426614174000","created":"2024-02-29"}'],
    invalid: [
      '{"id":"123e4567-e89b-12d3-a456-42661417400","created":"2024-02-29"}',
      '{"id":"123e4567-e89b-12d3-a456-426614174000","created":"2023-02-29"}',
      '{"id":"123e4567-e89b-12d3-a456-426614174000"}',
    ],
  },
  {
    name: "formats",
    schema: {
      type: "object",
      properties: {
        d: { type: "string", format: "date" },
        t: { type: "string", format: "time" },
        dt: { type: "string", format: "date-time" },
        u: { type: "string", format: "uuid" },
      },
      required: ["d", "t", "dt", "u"],
    },
    valid: [
      '{"d":"2000-02-29","t":"23:59:59Z","dt":"1999-12-31T00:00:00.123456789+14:00","u":"ABCDEF01-2345-6789-abcd-ef0123456789"}',
      '{"d":"2023-04-30","t":"00:00:00-05:30","dt":"2023-01-31T12:30:00Z","u":"00000000-0000-0000-0000-000000000000"}',
    ],
    invalid: [
      '{"d":"1900-02-29","t":"23:59:59Z","dt":"2000-01-01T00:00:00Z","u":"00000000-0000-0000-0000-000000000000"}',
      '{"d":"2023-04-31","t":"23:59:59Z","dt":"2000-01-01T00:00:00Z","u":"00000000-0000-0000-0000-000000000000"}',
      '{"d":"2023-13-01","t":"23:59:59Z","dt":"2000-01-01T00:00:00Z","u":"00000000-0000-0000-0000-000000000000"}',
      '{"d":"2023-01-01","t":"24:00:00Z","dt":"2000-01-01T00:00:00Z","u":"00000000-0000-0000-0000-000000000000"}',
      '{"d":"2023-01-01","t":"12:00:00","dt":"2000-01-01T00:00:00Z","u":"00000000-0000-0000-0000-000000000000"}',
      '{"d":"2023-01-01","t":"12:00:00Z","dt":"2000-01-01","u":"00000000-0000-0000-0000-000000000000"}',
      '{"d":"2023-01-01","t":"12:00:00Z","dt":"2000-01-01T00:00:00Z","u":"0000000-0000-0000-0000-000000000000"}',
    ],
  },
  {
    name: "integer bounds",
    schema: {
      type: "object",
      properties: {
        a: { type: "integer", minimum: -1234, maximum: 56789 },
        b: { type: "integer", exclusiveMinimum: 0, exclusiveMaximum: 1000 },
        c: { type: "integer", minimum: 100 },
        d: { type: "integer", maximum: -7 },
      },
      required: ["a", "b", "c", "d"],
    },
    valid: [
      '{"a":-1234,"b":1,"c":100,"d":-7}',
      '{"a":56789,"b":999,"c":123456789,"d":-100000}',
      '{"a":0,"b":10,"c":999,"d":-8}',
    ],
    invalid: [
      '{"a":-1235,"b":1,"c":100,"d":-7}',
      '{"a":56790,"b":1,"c":100,"d":-7}',
      '{"a":0,"b":0,"c":100,"d":-7}',
      '{"a":0,"b":1000,"c":100,"d":-7}',
      '{"a":0,"b":1,"c":99,"d":-7}',
      '{"a":0,"b":1,"c":100,"d":-6}',
      '{"a":0,"b":1,"c":100,"d":7}',
    ],
  },
  {
    name: "string lengths",
    schema: { type: "string", minLength: 2, maxLength: 5 },
    valid: ['"ab"', '"😀😀"', '"\\n\\u00e9"', '"abcde"', '"\\"\\\\"'],
    invalid: ['"a"', '"abcdef"', '"😀"', '""'],
  },
  {
    name: "nullable (OpenAPI)",
    schema: {
      type: "object",
      properties: {
        s: { type: "string", nullable: true, maxLength: 3 },
        x: { type: "integer", nullable: true },
      },
      required: ["s", "x"],
    },
    valid: ['{"s":null,"x":null}', '{"s":"abc","x":-4}'],
    invalid: ['{"s":"abcd","x":null}', '{"s":null,"x":"1"}', '{"s":1,"x":1}'],
  },
  {
    name: "additionalProperties true",
    schema: { type: "object", properties: { a: { type: "integer" } }, additionalProperties: true },
    valid: ["{}", '{"a":1}', '{"a":1,"b":[1,{"c":null}],"ab":"x"}', '{"x":{"y":[]}}'],
    invalid: ['{"a":"x"}', '{"b":1,"a":"x"}'],
  },
  {
    name: "additionalProperties as a schema",
    schema: {
      type: "object",
      properties: { a: { type: "string" } },
      required: ["a"],
      additionalProperties: { type: "integer", minimum: 0, maximum: 9 },
    },
    valid: ['{"a":""}', '{"a":"x","b":1,"aa":9}', '{"a":"x","":0}'],
    invalid: ['{"a":"x","b":10}', '{"a":"x","b":"y"}', '{"b":1}', '{"a":"x","a":1}'],
  },
  {
    name: "additionalProperties false with optional properties only",
    schema: {
      type: "object",
      properties: { p: { type: "boolean" }, q: { type: "null" } },
      additionalProperties: false,
    },
    valid: ["{}", '{"p":true}', '{"q":null}', '{"p":false,"q":null}'],
    invalid: ['{"r":1}', '{"p":null}'],
  },
  {
    // More members than are written inline: what follows each member is a chain of rules.
    name: "many properties, optional and required mixed",
    schema: {
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: 12 }, (_, i) => [
          `p${i}`,
          i % 3 === 0 ? { type: "integer" } : { type: "boolean" },
        ]),
      ),
      required: ["p4", "p9"],
      additionalProperties: false,
    },
    valid: [
      '{"p4":true,"p9":5}',
      '{"p0":1,"p4":true,"p9":2}',
      '{"p1":true,"p2":false,"p3":7,"p4":true,"p5":false,"p6":0,"p7":true,"p8":true,"p9":3,"p10":true,"p11":false}',
      '{"p4":false,"p5":true,"p9":1,"p11":true}',
    ],
    invalid: ["{}", '{"p4":true}', '{"p4":true,"p9":1,"p12":1}', '{"p4":1,"p9":1}', '{"p4":true,,"p9":1}'],
  },
  {
    name: "required names not declared in properties",
    schema: {
      type: "object",
      properties: { a: { type: "integer" } },
      required: ["b"],
      additionalProperties: { type: "string" },
    },
    valid: ['{"b":"x"}', '{"a":1,"b":"x"}', '{"a":1,"b":"x","c":"y"}'],
    invalid: ["{}", '{"a":1}', '{"b":1}'],
  },
  {
    name: "type arrays",
    schema: { type: ["string", "integer", "null"] },
    valid: ['"x"', "-12", "null"],
    invalid: ["1.5", "true", "[]", "{}"],
  },
  {
    name: "the empty schema (any JSON value)",
    schema: {},
    valid: ['{"a":[1,2.5e-3,"x",null,true,{}]}', "[]", '""', "0", "false"],
    invalid: ["{a:1}", "[1,]", "01", "tru"],
  },
  {
    name: "numbers",
    schema: { type: "array", items: { type: "number" } },
    valid: ["[0,-0.5,1e10,2E-3,-12.25e+2,3]"],
    invalid: ["[.5]", "[1.]", "[+1]", "[01]", "[1e]"],
  },
  {
    name: "numbers with bounds (written without an exponent)",
    schema: {
      type: "object",
      properties: {
        a: { type: "number", minimum: -2.5, exclusiveMaximum: 10 },
        b: { type: "number", exclusiveMinimum: 0.1, maximum: 0.3 },
        c: { type: "number", minimum: 1234.5678 },
        d: { type: "number", exclusiveMaximum: -0.001 },
      },
      required: ["a", "b", "c", "d"],
    },
    valid: [
      '{"a":-2.5,"b":0.3,"c":1234.5678,"d":-0.0011}',
      '{"a":9.999999999999998,"b":0.1000000000000001,"c":9999999999999999,"d":-9999999999999999.5}',
      '{"a":0,"b":0.2,"c":1234.56780,"d":-1}',
    ],
    invalid: [
      '{"a":-2.51,"b":0.2,"c":2000,"d":-1}',
      '{"a":10,"b":0.2,"c":2000,"d":-1}',
      '{"a":0,"b":0.1,"c":2000,"d":-1}',
      '{"a":0,"b":0.30000000000000004,"c":2000,"d":-1}',
      '{"a":0,"b":0.2,"c":1234.5677,"d":-1}',
      '{"a":0,"b":0.2,"c":2000,"d":-0.001}',
      '{"a":0,"b":0.2,"c":2000,"d":0}',
    ],
  },
  {
    name: "a schema without type allows every type its keywords do not constrain",
    schema: { minimum: 3 },
    valid: ['"x"', "{}", '{"a":[1]}', "[1,2]", "true", "null", "3", "3.5", "100"],
    invalid: ["2", "2.99", "-1", "-3.5"],
  },
  {
    name: "properties without type (non-objects pass)",
    schema: { properties: { a: { type: "integer" } }, required: ["a"] },
    valid: ['{"a":1}', '"a"', "1", "[]", "null", "false"],
    invalid: ['{"a":"x"}', "{}"],
  },
  {
    name: "oneOf of distinct types",
    schema: { oneOf: [{ type: "string", maxLength: 2 }, { type: "integer" }, { type: "null" }] },
    valid: ['"ab"', "7", "-0", "null"],
    invalid: ['"abc"', "1.5", "true", "[]"],
  },
  {
    name: "oneOf of disjoint values",
    schema: {
      oneOf: [{ enum: ["a", 1] }, { const: "b" }, { type: "boolean" }, { type: "number", const: 1.5 }],
    },
    valid: ['"a"', "1", '"b"', "true", "1.5"],
    invalid: ['"c"', "2", "null"],
  },
  {
    name: "oneOf with the discriminator beside it",
    schema: {
      type: "object",
      required: ["kind"],
      properties: { kind: { type: "string" }, x: { type: "integer" } },
      additionalProperties: false,
      oneOf: [
        { properties: { kind: { const: "a" } }, required: ["x"] },
        { properties: { kind: { enum: ["b", "c"] } } },
      ],
    },
    valid: ['{"kind":"a","x":1}', '{"kind":"b"}', '{"kind":"c","x":2}'],
    invalid: ['{"kind":"a"}', '{"kind":"d"}', "{}", '{"kind":"b","y":1}'],
  },
  {
    name: "a schema without type whose bounds no number or string meets (other types remain)",
    schema: { minimum: 5, maximum: 4, minLength: 3, maxLength: 2 },
    valid: ["{}", "[]", "true", "null", '{"a":"xyz"}'],
    invalid: ["4", "5", "4.5", '"abc"', '"ab"'],
  },
  {
    name: "type arrays leave out an unsatisfiable type",
    schema: { type: ["array", "string"], minItems: 3, maxItems: 2, items: { $ref: "#" } },
    valid: ['""', '"abc"'],
    invalid: ["[]", '[""]', "1"],
  },
  {
    // The object branch defines a rule for the array of X before X turns out unsatisfiable: it is undone.
    name: "an unsatisfiable type branch leaves no rules behind",
    schema: {
      $defs: {
        X: {
          type: "object",
          properties: { kids: { type: "array", items: { $ref: "#/$defs/X" } }, bad: false },
          required: ["bad"],
        },
      },
      type: ["object", "string"],
      properties: { x: { $ref: "#/$defs/X" } },
      required: ["x"],
    },
    valid: ['"s"', '""'],
    invalid: ['{"x":{}}', "{}", "1"],
  },
];
