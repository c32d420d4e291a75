// The generated OpenAPI document (gen/openapi/openapi.json) for tests: its operations, schemas
// with their references followed, and JSON Schema validators of its response bodies (ajv, in
// JSON Schema 2020-12, OpenAPI 3.1's dialect).
import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

export type Schema = Record<string, any>;

export const OPENAPI_PATH = new URL("../../gen/openapi/openapi.json", import.meta.url);

export function loadOpenApi(): Schema {
  return JSON.parse(readFileSync(OPENAPI_PATH, "utf8"));
}

/** The operation of `method` (lower-case) at the OpenAPI `path`, or undefined. */
export function operationOf(doc: Schema, method: string, path: string): Schema | undefined {
  return doc.paths[path]?.[method];
}

/** `schema` with a `$ref` (to #/components/...) followed, repeatedly. */
export function deref(doc: Schema, schema: Schema): Schema {
  let s = schema;
  while (typeof s.$ref === "string") {
    const parts = (s.$ref as string).replace(/^#\//, "").split("/");
    s = parts.reduce((node: any, part) => node[part], doc);
  }
  return s;
}

/** A response of an operation, its `$ref` (to #/components/responses) followed. */
export function responseOf(doc: Schema, op: Schema, status: number): Schema | undefined {
  const r = op.responses[String(status)];
  return r === undefined ? undefined : deref(doc, r);
}

/** Validators of the document's schemas, which refer to each other through #/components/schemas. */
export function openApiValidators(doc: Schema): (schema: Schema) => ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addFormat("int32", true);
  ajv.addFormat("int64", true);
  ajv.addSchema({ $id: "openapi", components: doc.components });
  const cache = new Map<string, ValidateFunction>();
  return (schema) => {
    const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/');
    let validate = cache.get(text);
    if (validate === undefined) {
      validate = ajv.compile(JSON.parse(text));
      cache.set(text, validate);
    }
    return validate;
  };
}
