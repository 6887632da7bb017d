// Reading a safetensors file (the format of the lab's checkpoints and of the site's
// models/<name>/weights.safetensors) into Float32Arrays, for the step-by-step trace (trace.js).
//
// The format: 8 bytes, the header's length N as a little-endian unsigned 64-bit integer; N bytes
// of JSON, {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}; then the raw
// data, each tensor row-major and little-endian between its offsets (counted from the data's start).
// F16, BF16 and F32 tensors are read; every value comes back as float32, exactly (fp16 and bf16
// numbers are all float32 numbers).

const BYTES = { F16: 2, BF16: 2, F32: 4 };

let halfTable = null; // the 65,536 fp16 bit patterns as float32, built on first use

/** One fp16 bit pattern (sign 1, exponent 5, fraction 10 bits) as a number. */
export function halfToFloat(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24; // subnormal: fraction / 1024 * 2^-14
  if (exponent === 0x1f) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

function halves() {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let bits = 0; bits < 65536; bits++) halfTable[bits] = halfToFloat(bits);
  }
  return halfTable;
}

/** The raw bytes of one tensor (little-endian) -> Float32Array of its n values. */
function decode(dtype, bytes, n) {
  const out = new Float32Array(n);
  if (dtype === "F32") {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i, true);
  } else if (dtype === "F16") {
    const table = halves();
    for (let i = 0; i < n; i++) out[i] = table[bytes[2 * i] | (bytes[2 * i + 1] << 8)];
  } else {
    // BF16: the top 16 bits of a float32
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < n; i++) bits[i] = ((bytes[2 * i] | (bytes[2 * i + 1] << 8)) << 16) >>> 0;
  }
  return out;
}

/**
 * Parse a safetensors file: Map name -> {dtype, shape, values: Float32Array}. `where` names the
 * file in error messages. Throws on a damaged file or a dtype other than F16, BF16, F32.
 */
export function readSafetensors(bytes, where = "the weights file") {
  if (!(bytes instanceof Uint8Array)) bytes = new Uint8Array(bytes);
  const damaged = (why) => new Error(`${where} is not a readable safetensors file (${why}): export the site again`);
  if (bytes.length < 8) throw damaged("shorter than its 8-byte header length");
  const head = new DataView(bytes.buffer, bytes.byteOffset, 8);
  const length = head.getUint32(0, true) + head.getUint32(4, true) * 2 ** 32;
  if (8 + length > bytes.length) throw damaged(`a header of ${length} bytes in a file of ${bytes.length}`);
  let header;
  try {
    header = JSON.parse(new globalThis.TextDecoder().decode(bytes.subarray(8, 8 + length)));
  } catch {
    throw damaged("its header is not JSON");
  }
  const data = bytes.subarray(8 + length);
  const tensors = new Map();
  for (const [name, info] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    const {
      dtype,
      shape,
      data_offsets: [begin, end],
    } = info;
    if (!(dtype in BYTES)) throw new Error(`${where}: tensor ${name} is ${dtype}; the page reads F16, BF16 and F32`);
    const n = shape.reduce((a, b) => a * b, 1);
    if (end - begin !== n * BYTES[dtype] || end > data.length) throw damaged(`tensor ${name} does not fit`);
    tensors.set(name, { dtype, shape, values: decode(dtype, data.subarray(begin, end), n) });
  }
  return tensors;
}
