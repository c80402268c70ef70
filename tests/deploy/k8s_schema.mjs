// Validates Kubernetes objects against the Kubernetes API's OpenAPI schema, offline, for
// tests/deploy/check_deploy.py. Reads a JSON array of {file, object} on stdin; prints one line per
// object ("ok FILE KIND NAME" or "FAIL FILE KIND NAME: why"); exits 1 if any failed.
//
// The schema is the npm package kubernetes-models (pinned in package-lock.json): a model class
// per apiVersion and kind, whose validate() runs the API's JSON schema compiled with ajv (types,
// required fields, enums, formats). Like the API's own schema it allows fields it does not know,
// which the API server then rejects (kubectl's field validation) or drops, so a misspelt field
// would pass: strictFields() adds what kubeconform's -strict does, from the same package's type
// declarations (each model's .d.ts lists its fields and their types).
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const modelsRoot = path.dirname(require.resolve("kubernetes-models/package.json"));
const nodeModules = path.dirname(modelsRoot);

// "apps/v1" -> kubernetes-models/apps/v1, "v1" -> kubernetes-models/v1.
async function modelClass(apiVersion, kind) {
  if (typeof apiVersion !== "string" || !/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion)) {
    return null;
  }
  let module;
  try {
    module = await import(`kubernetes-models/${apiVersion}`);
  } catch {
    return null;
  }
  const cls = module[kind];
  return typeof cls === "function" && cls.kind === kind && cls.apiVersion === apiVersion
    ? { cls, file: path.join(modelsRoot, apiVersion, `${kind}.d.ts`) }
    : null;
}

// A .d.ts of kubernetes-models: its imports (name -> file) and its first interface's fields
// (name -> type text), read once each.
const declarations = new Map();
function readDeclaration(file) {
  if (declarations.has(file)) return declarations.get(file);
  const text = readFileSync(file, "utf8").replace(/\/\*\*[\s\S]*?\*\//g, "");
  const imports = new Map();
  for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
    const [, name, spec] = m;
    const target = spec.startsWith(".")
      ? path.join(path.dirname(file), spec.replace(/\.js$/, ".d.ts"))
      : path.join(nodeModules, `${spec}.d.ts`);
    imports.set(name, target);
  }
  const body = text.match(/^export interface \w+(?: extends [\w, ]+)? \{\n([\s\S]*?)^\}/m);
  let fields = null;
  if (body) {
    fields = new Map();
    // One field per "name"?: type; a map's type spans lines ({ [key: string]: T; }).
    const fieldRe = /^ {4}"([^"]+)"\??: ((?:\{\n[\s\S]*?\n {4}\})|[^\n]*);$/gm;
    for (const m of body[1].matchAll(fieldRe)) fields.set(m[1], m[2].replace(/\s+/g, " "));
  }
  const result = { imports, fields };
  declarations.set(file, result);
  return result;
}

// Every key of `value` must be a field of the declared type; recurses through arrays, maps and
// referenced interfaces. Type aliases (IntOrString, Quantity, Time) and primitives are leaves.
function strictFields(value, type, decl, where, errors) {
  type = type.trim();
  let m;
  if ((m = type.match(/^Array<(.+)>$/))) {
    if (Array.isArray(value)) {
      value.forEach((item, i) => strictFields(item, m[1], decl, `${where}[${i}]`, errors));
    }
    return;
  }
  if ((m = type.match(/^\{ \[key: string\]: (.+); \}$/))) {
    if (value && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) strictFields(v, m[1], decl, `${where}.${k}`, errors);
    }
    return;
  }
  if (!/^I\w+$/.test(type) || !decl.imports.has(type)) return;
  const file = decl.imports.get(type);
  if (!existsSync(file)) return;
  const target = readDeclaration(file);
  if (!target.fields || !value || typeof value !== "object" || Array.isArray(value)) return;
  checkObject(value, target, where, errors);
}

function checkObject(value, decl, where, errors) {
  for (const [k, v] of Object.entries(value)) {
    if (!decl.fields.has(k)) {
      errors.push(`${where || "."}: unknown field "${k}"`);
      continue;
    }
    strictFields(v, decl.fields.get(k), decl, where ? `${where}.${k}` : k, errors);
  }
}

const input = JSON.parse(readFileSync(0, "utf8"));
let failed = 0;
for (const { file, object } of input) {
  const kind = object?.kind;
  const name = object?.metadata?.name ?? "?";
  const label = `${file} ${kind} ${name}`;
  const model = await modelClass(object?.apiVersion, kind);
  if (!model) {
    console.log(`FAIL ${label}: no kind ${kind} in apiVersion ${object?.apiVersion}`);
    failed++;
    continue;
  }
  const errors = [];
  try {
    new model.cls(object).validate();
  } catch (e) {
    errors.push(String(e.message ?? e));
  }
  checkObject(object, readDeclaration(model.file), "", errors);
  if (errors.length) {
    console.log(`FAIL ${label}: ${errors.join("; ")}`);
    failed++;
  } else {
    console.log(`ok ${label}`);
  }
}
process.exit(failed ? 1 : 0);
