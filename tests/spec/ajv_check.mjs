// What a generic JSON Schema validator (ajv, as Postman and Prism use) makes of the bundled
// document: every component schema must compile with only standard formats (ajv-formats; our
// own are x-format, which generic validators ignore), and every example in the document (schema
// `example`/`examples`, media-type, parameter and header `example`, Example Objects' `value`)
// must validate against its schema. Non-strict: OpenAPI's own keywords (discriminator, example,
// x-*) are not JSON Schema, but an unknown format is a failure, not the warning ajv logs.
// Every request and response body shows an example, too: a media type of a request body or a
// response (in paths or components), other than a text/html page, without `example` or
// `examples` is a failure.
//   node tests/spec/ajv_check.mjs [generated/openapi.json]      (make lint-spec runs it)
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const file = process.argv[2] || "generated/openapi.json";
const doc = JSON.parse(readFileSync(file, "utf8"));
const failures = [];
let where = "";
const ajv = new Ajv2020({
  strict: false,
  allErrors: true,
  logger: {
    log() {},
    warn(...m) {
      failures.push(`${where}: ${m.join(" ")}`);
    },
    error(...m) {
      failures.push(`${where}: ${m.join(" ")}`);
    },
  },
});
addFormats(ajv);
const ID = "https://treasury.invalid/openapi.json";
ajv.addSchema({ ...doc, $id: ID });

const esc = (t) => String(t).replace(/~/g, "~0").replace(/\//g, "~1");
const validators = new Map();
function validator(ptr) {
  if (!validators.has(ptr)) {
    where = ptr;
    let v = null;
    try {
      const frag = ptr.split("/").map((t) => encodeURIComponent(t).replace(/%7E/g, "~"));
      v = ajv.compile({ $ref: `${ID}#${frag.join("/")}` });
    } catch (e) {
      failures.push(`${ptr}: does not compile: ${e.message}`);
    }
    validators.set(ptr, v);
  }
  return validators.get(ptr);
}

let examples = 0;
function check(schemaPtr, value, examplePtr) {
  const v = validator(schemaPtr);
  if (!v) return;
  examples++;
  if (!v(value))
    for (const e of v.errors)
      failures.push(`${examplePtr}: ${e.instancePath || "(root)"} ${e.message} (${e.schemaPath})`);
}

function walkSchema(s, ptr) {
  if (!s || typeof s !== "object" || Array.isArray(s)) return;
  if ("example" in s) check(ptr, s.example, `${ptr}/example`);
  if (Array.isArray(s.examples)) s.examples.forEach((x, i) => check(ptr, x, `${ptr}/examples/${i}`));
  for (const k of ["properties", "$defs", "patternProperties"])
    if (s[k] && typeof s[k] === "object")
      for (const [n, sub] of Object.entries(s[k])) walkSchema(sub, `${ptr}/${k}/${esc(n)}`);
  for (const k of ["items", "additionalProperties", "not", "contains"])
    if (s[k] && typeof s[k] === "object") walkSchema(s[k], `${ptr}/${k}`);
  for (const k of ["allOf", "oneOf", "anyOf", "prefixItems"])
    if (Array.isArray(s[k])) s[k].forEach((sub, i) => walkSchema(sub, `${ptr}/${k}/${i}`));
}

// Where bodies are described: a request body or a response, in an operation or a component.
const BODY = /^(\/paths\/[^/]+\/[a-z]+\/(requestBody|responses\/[^/]+)|\/components\/(requestBodies|responses)\/[^/]+)$/;
let bodies = 0;
function requireExamples(content, ptr) {
  for (const [media, mt] of Object.entries(content)) {
    if (media === "text/html") continue;
    bodies++;
    const has = mt && typeof mt === "object" &&
      ("example" in mt || (mt.examples && Object.keys(mt.examples).length > 0));
    if (!has) failures.push(`${ptr}/content/${esc(media)}: no example (every body but a text/html page has one)`);
  }
}

function walk(node, ptr) {
  if (!node || typeof node !== "object") return;
  if (Array.isArray(node)) {
    node.forEach((x, i) => walk(x, `${ptr}/${i}`));
    return;
  }
  if (BODY.test(ptr) && node.content && typeof node.content === "object" && !Array.isArray(node.content))
    requireExamples(node.content, ptr);
  if (node.schema && typeof node.schema === "object") {
    walkSchema(node.schema, `${ptr}/schema`);
    if ("example" in node) check(`${ptr}/schema`, node.example, `${ptr}/example`);
    if (node.examples && typeof node.examples === "object" && !Array.isArray(node.examples))
      for (const [n, ex] of Object.entries(node.examples))
        if (ex && typeof ex === "object" && "value" in ex)
          check(`${ptr}/schema`, ex.value, `${ptr}/examples/${esc(n)}/value`);
  }
  for (const [k, v] of Object.entries(node))
    if (k !== "schema" && !(ptr === "/components" && k === "schemas")) walk(v, `${ptr}/${esc(k)}`);
}

const schemas = (doc.components && doc.components.schemas) || {};
for (const name of Object.keys(schemas)) {
  validator(`/components/schemas/${esc(name)}`);
  walkSchema(schemas[name], `/components/schemas/${esc(name)}`);
}
walk(doc, "");

const problems = [...new Set(failures)];
if (problems.length) {
  for (const f of problems) console.error(`ajv: ${f}`);
  console.error(`ajv: ${problems.length} problem(s) in ${file}`);
  process.exit(1);
}
console.log(`ajv: ${Object.keys(schemas).length} component schemas compile, ` +
            `${examples} examples validate, ${bodies} bodies have one (${file})`);
