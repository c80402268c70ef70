#!/usr/bin/env node
// Bundles the example apps that need bundling: every examples/<name>/src/app.{js,jsx,ts,tsx}
// becomes examples/<name>/dist/app.js, one self-contained ES module isolane can load (isolane
// resolves no bare imports such as "hono" or "react").
//
// Usage: node tools/bundle-examples.mjs [--apps-root DIR] [--outdir-root DIR] [--force] [--quiet]
//
//   --apps-root DIR    bundle DIR/<name>/src/app.* instead of examples/<name>/src/app.* (the
//                      test suite's apps built on npm packages: tests/packages)
//   --outdir-root DIR  write DIR/<name>/dist/app.js instead of <apps root>/<name>/dist/app.js
//   --force            rebuild even when the output looks up to date
//   --quiet            print nothing but errors
//
// A bundle is rebuilt only when it is missing or older than one of its inputs (the files esbuild
// read last time, recorded in dist/app.js.inputs.json), package-lock.json or this script.
// Exit status: 0 on success, 1 when a bundle fails, 2 on bad usage.

import * as esbuild from "esbuild";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let EXAMPLES = path.join(ROOT, "examples");
const SELF = fileURLToPath(import.meta.url);
const LOCKFILE = path.join(ROOT, "package-lock.json");
const ENTRY_NAMES = ["app.js", "app.jsx", "app.ts", "app.tsx"];

function usage(message) {
  if (message) console.error(`bundle-examples: ${message}`);
  console.error("usage: node tools/bundle-examples.mjs [--apps-root DIR] [--outdir-root DIR] [--force] [--quiet]");
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { outdirRoot: null, force: false, quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--force") opts.force = true;
    else if (arg === "--quiet" || arg === "-q") opts.quiet = true;
    else if (arg === "--apps-root") {
      if (i + 1 >= argv.length) usage("--apps-root needs a directory");
      EXAMPLES = path.resolve(argv[++i]);
    } else if (arg === "--outdir-root") {
      if (i + 1 >= argv.length) usage("--outdir-root needs a directory");
      opts.outdirRoot = path.resolve(argv[++i]);
    } else if (arg.startsWith("--outdir-root=")) {
      opts.outdirRoot = path.resolve(arg.slice("--outdir-root=".length));
    } else if (arg === "--help" || arg === "-h") usage();
    else usage(`unknown argument: ${arg}`);
  }
  return opts;
}

// [{ name, entry, outfile }] for every example with a src/app.* entry point, sorted by name.
function findExamples(outdirRoot) {
  const found = [];
  for (const dirent of fs.readdirSync(EXAMPLES, { withFileTypes: true })) {
    if (!dirent.isDirectory()) continue;
    const srcDir = path.join(EXAMPLES, dirent.name, "src");
    const entries = ENTRY_NAMES.map((f) => path.join(srcDir, f)).filter((f) => fs.existsSync(f));
    if (entries.length === 0) continue;
    if (entries.length > 1) {
      throw new Error(`examples/${dirent.name}/src has more than one entry point: ` +
        entries.map((e) => path.basename(e)).join(", "));
    }
    const outBase = outdirRoot ?? EXAMPLES;
    found.push({
      name: dirent.name,
      entry: entries[0],
      outfile: path.join(outBase, dirent.name, "dist", "app.js"),
    });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return null;
  }
}

function inputsFile(outfile) {
  return `${outfile}.inputs.json`;
}

function isUpToDate({ entry, outfile }) {
  const outTime = mtime(outfile);
  if (outTime === null) return false;
  let inputs;
  try {
    inputs = JSON.parse(fs.readFileSync(inputsFile(outfile), "utf8"));
  } catch {
    return false;
  }
  if (!Array.isArray(inputs) || !inputs.includes(entry)) return false;
  for (const file of [...inputs, SELF, LOCKFILE]) {
    const t = mtime(file);
    if (t === null || t > outTime) return false;
  }
  return true;
}

function buildOptions({ entry, outfile }) {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    // Prefer the browser builds of packages: isolane has web APIs, not Node's.
    mainFields: ["browser", "module", "main"],
    conditions: ["worker", "browser"],
    resolveExtensions: [".jsx", ".js", ".mjs", ".cjs", ".tsx", ".ts", ".json"],
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    minify: false,
    sourcemap: false,
    legalComments: "eof",
    metafile: true,
    logLevel: "silent",
    absWorkingDir: ROOT,
  };
}

// What a bundle must not contain: any leftover require() (the output is ESM and isolane has no
// CommonJS loader), and references to Node-only globals that were not compiled away.
function checkBundle(name, outfile) {
  const code = fs.readFileSync(outfile, "utf8");
  const problems = [];
  for (const m of code.matchAll(/\b(?:__require|require)\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g)) {
    problems.push(`require("${m[1]}")`);
  }
  if (code.includes("Dynamic require of")) problems.push("a dynamic require() esbuild could not resolve");
  if (/\bprocess\.env\b/.test(code)) problems.push("process.env (NODE_ENV not defined away?)");
  if (problems.length > 0) {
    throw new Error(`${name}: the bundle still depends on Node: ${[...new Set(problems)].join(", ")}`);
  }
}

async function bundleOne(example, opts) {
  const rel = path.relative(ROOT, example.outfile);
  if (!opts.force && isUpToDate(example)) {
    if (!opts.quiet) console.log(`  ${rel} is up to date`);
    return;
  }
  const start = performance.now();
  fs.rmSync(inputsFile(example.outfile), { force: true });
  let result;
  try {
    result = await esbuild.build(buildOptions(example));
  } catch (e) {
    const messages = e.errors
      ? await esbuild.formatMessages(e.errors, { kind: "error", color: process.stderr.isTTY })
      : [String(e?.stack ?? e)];
    throw new Error(`${example.name}: esbuild failed:\n${messages.join("")}`);
  }
  if (result.warnings.length > 0 && !opts.quiet) {
    const warnings = await esbuild.formatMessages(result.warnings, { kind: "warning", color: process.stderr.isTTY });
    process.stderr.write(warnings.join(""));
  }
  try {
    checkBundle(example.name, example.outfile);
  } catch (e) {
    fs.rmSync(example.outfile, { force: true });
    throw e;
  }
  const inputs = Object.keys(result.metafile.inputs).map((f) => path.resolve(ROOT, f)).sort();
  fs.writeFileSync(inputsFile(example.outfile), JSON.stringify(inputs, null, 2) + "\n");
  if (!opts.quiet) {
    const size = fs.statSync(example.outfile).size;
    console.log(`  ${rel}  ${(size / 1024).toFixed(1)} KiB  (${(performance.now() - start).toFixed(0)} ms)`);
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const examples = findExamples(opts.outdirRoot);
  if (examples.length === 0) {
    console.error(`bundle-examples: no ${path.relative(ROOT, EXAMPLES)}/*/src/app.{js,jsx,ts,tsx} found`);
    process.exit(1);
  }
  const failures = [];
  for (const example of examples) {
    try {
      await bundleOne(example, opts);
    } catch (e) {
      failures.push(e);
    }
  }
  if (failures.length > 0) {
    for (const e of failures) console.error(`bundle-examples: ${e.message}`);
    console.error(`bundle-examples: ${failures.length} of ${examples.length} bundle(s) failed`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(`bundle-examples: ${e?.stack ?? e}`);
  process.exit(1);
});
