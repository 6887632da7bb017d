// Builds the page into dist/: the scripts bundled by esbuild from src/ (and the npm packages),
// index.html and style.css as they are, and onnxruntime-web's wasm runtime copied into dist/ort/
// so that the page never asks another origin for anything. `python -m lab export-web` copies
// dist/ into the site beside the models.
import { build } from "esbuild";
import { cpSync, mkdirSync, rmSync } from "node:fs";

const here = new URL(".", import.meta.url).pathname;
const dist = `${here}dist`;
rmSync(dist, { recursive: true, force: true });
mkdirSync(`${dist}/ort`, { recursive: true });

await build({
  entryPoints: [`${here}src/main.js`],
  bundle: true,
  format: "esm",
  minify: true,
  sourcemap: false,
  target: "es2022",
  conditions: ["onnxruntime-web-use-extern-wasm"], // the wasm runtime stays a file of its own (dist/ort/)
  outfile: `${dist}/app.js`,
  legalComments: "linked",
});

for (const file of ["index.html", "style.css"]) cpSync(`${here}${file}`, `${dist}/${file}`);
const ort = `${here}node_modules/onnxruntime-web/dist`;
for (const file of ["ort-wasm-simd-threaded.wasm", "ort-wasm-simd-threaded.mjs"]) {
  cpSync(`${ort}/${file}`, `${dist}/ort/${file}`);
}
console.log(`built ${dist}`);
