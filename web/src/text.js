// Text -> tokens for the browser edition, exactly as the lab's Python does it (lab.tokenizer).
//
// The lab's tokenizer is BERT's: BertNormalizer (drop control characters, space out CJK
// characters, lower-case, strip accents), BertPreTokenizer (split at whitespace, every
// punctuation mark alone), then WordPiece ("playing" -> "play" "##ing"). The WordPiece step is
// @huggingface/tokenizers' own model; the first two steps are written out here, one character at
// a time, so that every token keeps the characters of the original text it came from (its
// offsets), which that library does not report.
//
// Offsets are JavaScript string indices (UTF-16 code units): text.slice(start, end) is the
// token's text. Python counts code points instead; the two differ after an emoji or any other
// character outside the Basic Multilingual Plane.

import { Tokenizer } from "@huggingface/tokenizers";
import { taskSettings } from "./task.js";

// ------------------------------------------------------------------------------------------
// cleanText: lab.tokenizer.clean_text
// ------------------------------------------------------------------------------------------

// Control characters text never needs (tab, newline and carriage return stay): C0 and C1.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is its purpose
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/g;
// A surrogate without its partner: Python's encode("utf-8", errors="replace") makes it "?".
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// Python's str.isspace() characters (JavaScript's \s differs: it has U+FEFF, lacks U+001C-U+001F and U+0085).
export const PY_SPACE =
  "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const ONLY_SPACE = new RegExp(`^[${PY_SPACE}]*$`);
const SPACE_AT_ENDS = new RegExp(`^[${PY_SPACE}]+|[${PY_SPACE}]+$`, "g");

/** Python's str.strip(): whitespace off both ends. */
export function pyStrip(s) {
  return s.replace(SPACE_AT_ENDS, "");
}

/** Python's type name of a value, for the "must be text" message. */
function pythonTypeName(value) {
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  if (typeof value === "boolean") return "bool";
  if (Array.isArray(value)) return "list";
  if (typeof value === "object") return "dict";
  return typeof value;
}

/** Text from the user made safe to tokenize (lab.tokenizer.clean_text); throws Error with Python's wording. */
export function cleanText(value, name = "text", { required = true, maxChars = null } = {}) {
  if (value === null || value === undefined) value = "";
  if (typeof value !== "string") {
    throw new Error(`${name} must be text (a string), got ${pythonTypeName(value)}`);
  }
  value = value.replace(LONE_SURROGATE, "?").replace(CONTROL, "");
  if (required && ONLY_SPACE.test(value)) throw new Error(`${name} is empty: type some text`);
  // max_chars counts code points, as Python's value[:max_chars] does
  return maxChars ? Array.from(value).slice(0, maxChars).join("") : value;
}

// ------------------------------------------------------------------------------------------
// Character classes of BertNormalizer / BertPreTokenizer (the Rust `tokenizers` crate)
// ------------------------------------------------------------------------------------------

// Rust's char::is_whitespace (Unicode White_Space); BertNormalizer turns each into a space.
const WHITESPACE = /^[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/u;

// The `tokenizers` crate classifies characters with Unicode tables older than today's browsers'
// (a character's category can change, new ones get one), so the three classes it uses are
// written out here as code point ranges (hex), read off the Python backend one code point at a
// time; tests/test_web_logic.py checks every code point against it.
//   DROPPED      what clean_text removes: U+0000, U+FFFD and the "other" characters (Cc Cf Co)
//   MARKS        what strip_accents removes after NFD (nonspacing marks, Mn)
//   PUNCTUATION  what BertPreTokenizer makes a word of its own (ASCII punctuation and P*)
//   NFD_UNKNOWN  characters browsers decompose but the crate keeps whole (newer than its tables)
//   NONSTARTERS  the marks NFD reorders (canonical combining class above 0)
const DROPPED =
  "0-8 b-c e-1f 7f-9f ad 600-605 61c 6dd 70f 180e 200b-200f 202a-202e 2060-2064 2066-206f e000-f8ff " +
  "feff fff9-fffb fffd 110bd 1bca0-1bca3 1d173-1d17a e0001 e0020-e007f f0000-ffffd 100000-10fffd";
const MARKS =
  "300-36f 483-487 591-5bd 5bf 5c1-5c2 5c4-5c5 5c7 610-61a 64b-65f 670 6d6-6dc 6df-6e4 6e7-6e8 " +
  "6ea-6ed 711 730-74a 7a6-7b0 7eb-7f3 816-819 81b-823 825-827 829-82d 859-85b 8e3-902 93a 93c " +
  "941-948 94d 951-957 962-963 981 9bc 9c1-9c4 9cd 9e2-9e3 a01-a02 a3c a41-a42 a47-a48 a4b-a4d a51 " +
  "a70-a71 a75 a81-a82 abc ac1-ac5 ac7-ac8 acd ae2-ae3 b01 b3c b3f b41-b44 b4d b56 b62-b63 b82 bc0 " +
  "bcd c00 c3e-c40 c46-c48 c4a-c4d c55-c56 c62-c63 c81 cbc cbf cc6 ccc-ccd ce2-ce3 d01 d41-d44 d4d " +
  "d62-d63 dca dd2-dd4 dd6 e31 e34-e3a e47-e4e eb1 eb4-eb9 ebb-ebc ec8-ecd f18-f19 f35 f37 f39 " +
  "f71-f7e f80-f84 f86-f87 f8d-f97 f99-fbc fc6 102d-1030 1032-1037 1039-103a 103d-103e 1058-1059 " +
  "105e-1060 1071-1074 1082 1085-1086 108d 109d 135d-135f 1712-1714 1732-1734 1752-1753 1772-1773 " +
  "17b4-17b5 17b7-17bd 17c6 17c9-17d3 17dd 180b-180d 18a9 1920-1922 1927-1928 1932 1939-193b " +
  "1a17-1a18 1a1b 1a56 1a58-1a5e 1a60 1a62 1a65-1a6c 1a73-1a7c 1a7f 1ab0-1abd 1b00-1b03 1b34 " +
  "1b36-1b3a 1b3c 1b42 1b6b-1b73 1b80-1b81 1ba2-1ba5 1ba8-1ba9 1bab-1bad 1be6 1be8-1be9 1bed " +
  "1bef-1bf1 1c2c-1c33 1c36-1c37 1cd0-1cd2 1cd4-1ce0 1ce2-1ce8 1ced 1cf4 1cf8-1cf9 1dc0-1df5 " +
  "1dfc-1dff 20d0-20dc 20e1 20e5-20f0 2cef-2cf1 2d7f 2de0-2dff 302a-302d 3099-309a a66f a674-a67d " +
  "a69e-a69f a6f0-a6f1 a802 a806 a80b a825-a826 a8c4 a8e0-a8f1 a926-a92d a947-a951 a980-a982 a9b3 " +
  "a9b6-a9b9 a9bc a9e5 aa29-aa2e aa31-aa32 aa35-aa36 aa43 aa4c aa7c aab0 aab2-aab4 aab7-aab8 aabe- " +
  "aabf aac1 aaec-aaed aaf6 abe5 abe8 abed fb1e fe00-fe0f fe20-fe2f 101fd 102e0 10376-1037a " +
  "10a01-10a03 10a05-10a06 10a0c-10a0f 10a38-10a3a 10a3f 10ae5-10ae6 11001 11038-11046 1107f-11081 " +
  "110b3-110b6 110b9-110ba 11100-11102 11127-1112b 1112d-11134 11173 11180-11181 111b6-111be " +
  "111ca-111cc 1122f-11231 11234 11236-11237 112df 112e3-112ea 11300-11301 1133c 11340 11366-1136c " +
  "11370-11374 114b3-114b8 114ba 114bf-114c0 114c2-114c3 115b2-115b5 115bc-115bd 115bf-115c0 " +
  "115dc-115dd 11633-1163a 1163d 1163f-11640 116ab 116ad 116b0-116b5 116b7 1171d-1171f 11722-11725 " +
  "11727-1172b 16af0-16af4 16b30-16b36 16f8f-16f92 1bc9d-1bc9e 1d167-1d169 1d17b-1d182 1d185-1d18b " +
  "1d1aa-1d1ad 1d242-1d244 1da00-1da36 1da3b-1da6c 1da75 1da84 1da9b-1da9f 1daa1-1daaf 1e8d0-1e8d6 " +
  "e0100-e01ef";
const PUNCTUATION_RANGES =
  "21-2f 3a-40 5b-60 7b-7e a1 a7 ab b6-b7 bb bf 37e 387 55a-55f 589-58a 5be 5c0 5c3 5c6 5f3-5f4 " +
  "609-60a 60c-60d 61b 61e-61f 66a-66d 6d4 700-70d 7f7-7f9 830-83e 85e 964-965 970 af0 df4 e4f " +
  "e5a-e5b f04-f12 f14 f3a-f3d f85 fd0-fd4 fd9-fda 104a-104f 10fb 1360-1368 1400 166d-166e " +
  "169b-169c 16eb-16ed 1735-1736 17d4-17d6 17d8-17da 1800-180a 1944-1945 1a1e-1a1f 1aa0-1aa6 " +
  "1aa8-1aad 1b5a-1b60 1bfc-1bff 1c3b-1c3f 1c7e-1c7f 1cc0-1cc7 1cd3 2010-2027 2030-2043 2045-2051 " +
  "2053-205e 207d-207e 208d-208e 2308-230b 2329-232a 2768-2775 27c5-27c6 27e6-27ef 2983-2998 " +
  "29d8-29db 29fc-29fd 2cf9-2cfc 2cfe-2cff 2d70 2e00-2e2e 2e30-2e42 3001-3003 3008-3011 3014-301f " +
  "3030 303d 30a0 30fb a4fe-a4ff a60d-a60f a673 a67e a6f2-a6f7 a874-a877 a8ce-a8cf a8f8-a8fa a8fc " +
  "a92e-a92f a95f a9c1-a9cd a9de-a9df aa5c-aa5f aade-aadf aaf0-aaf1 abeb fd3e-fd3f fe10-fe19 " +
  "fe30-fe52 fe54-fe61 fe63 fe68 fe6a-fe6b ff01-ff03 ff05-ff0a ff0c-ff0f ff1a-ff1b ff1f-ff20 " +
  "ff3b-ff3d ff3f ff5b ff5d ff5f-ff65 10100-10102 1039f 103d0 1056f 10857 1091f 1093f 10a50-10a58 " +
  "10a7f 10af0-10af6 10b39-10b3f 10b99-10b9c 11047-1104d 110bb-110bc 110be-110c1 11140-11143 " +
  "11174-11175 111c5-111c9 111cd 111db 111dd-111df 11238-1123d 112a9 114c6 115c1-115d7 11641-11643 " +
  "1173c-1173e 12470-12474 16a6e-16a6f 16af5 16b37-16b3b 16b44 1bc9f 1da87-1da8b";

const NFD_UNKNOWN = "105c9 105e4 11383 11385 1138e 11391 113c5 113c7-113c8 11938 16121-16128 16d68-16d6a";

const NONSTARTERS =
  "300-344 346-34e 350-36f 483-487 591-5bd 5bf 5c1-5c2 5c4-5c5 5c7 610-61a 64b-65f 670 6d6-6dc " +
  "6df-6e4 6e7-6e8 6ea-6ed 711 730-74a 7eb-7f3 816-819 81b-823 825-827 829-82d 859-85b 8d4-8e1 " +
  "8e3-8ff 93c 94d 951-954 9bc 9cd a3c a4d abc acd b3c b4d bcd c4d c55-c56 cbc ccd d4d dca e38-e3a " +
  "e48-e4b eb8-eb9 ec8-ecb f18-f19 f35 f37 f39 f71-f75 f7a-f7d f80-f84 f86-f87 fc6 1037 1039-103a " +
  "108d 135d-135f 1714 1734 17d2 17dd 18a9 1939-193b 1a17-1a18 1a60 1a75-1a7c 1a7f 1ab0-1abd 1b34 " +
  "1b44 1b6b-1b73 1baa-1bab 1be6 1bf2-1bf3 1c37 1cd0-1cd2 1cd4-1ce0 1ce2-1ce8 1ced 1cf4 1cf8-1cf9 " +
  "1dc0-1df5 1dfb-1dff 20d0-20dc 20e1 20e5-20f0 2cef-2cf1 2d7f 2de0-2dff 302a-302f 3099-309a a66f " +
  "a674-a67d a69e-a69f a6f0-a6f1 a806 a8c4 a8e0-a8f1 a92b-a92d a953 a9b3 a9c0 aab0 aab2-aab4 " +
  "aab7-aab8 aabe-aabf aac1 aaf6 abed fb1e fe20-fe2f 101fd 102e0 10376-1037a 10a0d 10a0f " +
  "10a38-10a3a 10a3f 10ae5-10ae6 11046 1107f 110b9-110ba 11100-11102 11133-11134 11173 111c0 111ca " +
  "11235-11236 112e9-112ea 1133c 1134d 11366-1136c 11370-11374 11442 11446 114c2-114c3 115bf-115c0 " +
  "1163f 116b6-116b7 1172b 11c3f 16af0-16af4 16b30-16b36 1bc9e 1d165-1d169 1d16d-1d172 1d17b-1d182 " +
  "1d185-1d18b 1d1aa-1d1ad 1d242-1d244 1e000-1e006 1e008-1e018 1e01b-1e021 1e023-1e024 1e026-1e02a " +
  "1e8d0-1e8d6 1e944-1e94a";

/** A sorted list of [first, last] code point ranges from "a-b c ..." (hex). */
function parseRanges(text) {
  return text
    .split(" ")
    .map((r) => r.split("-").map((h) => parseInt(h, 16)))
    .map(([a, b]) => [a, b ?? a]);
}

/** Whether code point cp lies in one of the sorted ranges (binary search). */
function inRanges(ranges, cp) {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < ranges[mid][0]) hi = mid - 1;
    else if (cp > ranges[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

const DROP = parseRanges(DROPPED);
const MARK = parseRanges(MARKS);
const PUNCT = parseRanges(PUNCTUATION_RANGES);
const NO_NFD = parseRanges(NFD_UNKNOWN);
const NONSTARTER = parseRanges(NONSTARTERS);

/**
 * NFD puts each run of combining marks in canonical order ("a" U+0301 U+0316 -> "a" U+0316 U+0301):
 * the characters move, each position keeps its original characters (as the crate's alignments do).
 * Only the marks the crate knows as such are reordered. chars: [[char, start, end], ...], decomposed.
 */
function reorderMarks(chars) {
  const out = chars.slice();
  let from = 0; // start of the current run of marks
  for (let k = 0; k <= chars.length; k++) {
    if (k < chars.length && inRanges(NONSTARTER, chars[k][0].codePointAt(0))) continue;
    if (k - from > 1) {
      const ordered = Array.from(
        chars
          .slice(from, k)
          .map((ch) => ch[0])
          .join("")
          .normalize("NFD"),
      );
      ordered.forEach((c, i) => (out[from + i] = [c, chars[from + i][1], chars[from + i][2], false]));
    }
    from = k + 1;
  }
  return out;
}

/** NFD of one character as the crate does it. */
function decompose(c) {
  return inRanges(NO_NFD, c.codePointAt(0)) ? c : c.normalize("NFD");
}

/** CJK ideographs that BertNormalizer surrounds with spaces (the ranges of BERT's _is_chinese_char). */
function isChinese(cp) {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

// ------------------------------------------------------------------------------------------
// TextEncoder
// ------------------------------------------------------------------------------------------

/** A Python-style repr of a string, for error messages that quote what the user typed. */
export function pyRepr(s) {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
  return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
}

export class TextEncoder {
  /** Build from a parsed tokenizer.json and the model's manifest entry (special ids, config.max_length). */
  constructor(tokenizerJson, entry) {
    this.tokenizer = new Tokenizer(tokenizerJson, {});
    this.wordpiece = this.tokenizer.model; // the library's WordPiece: word -> pieces
    this.model = entry.name; // named in the errors about its manifest entry
    this.special = { ...entry.special };
    this.maxLength = taskSettings(entry.config, ["max_length"], entry.name, "config").max_length;
    const norm = tokenizerJson.normalizer ?? {};
    this.cleanControl = norm.clean_text ?? true;
    this.spaceChinese = norm.handle_chinese_chars ?? true;
    this.lowercase = norm.lowercase ?? entry.lowercase ?? true;
    // strip_accents null: do what lowercase does (as BERT)
    this.stripAccents = norm.strip_accents ?? this.lowercase;
    this.prefix = tokenizerJson.model?.continuing_subword_prefix ?? "##";
    // Added tokens ([CLS], [MASK], ...) are matched in the raw text, before any normalization.
    this.added = new Map((tokenizerJson.added_tokens ?? []).map((t) => [t.content, t.id]));
    const escaped = [...this.added.keys()]
      .sort((a, b) => b.length - a.length) // the longest first at one position
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    this.addedPattern = escaped.length ? new RegExp(escaped.join("|"), "g") : null;
    this.idToToken = this.tokenizer.model.vocab;
  }

  /** Vocabulary id of a token string (undefined when it is not in the vocabulary). */
  tokenId(token) {
    return this.tokenizer.token_to_id(token);
  }

  /** Token string of a vocabulary id. */
  idToTokenString(id) {
    return this.idToToken[id];
  }

  /** WordPiece tokens of `text` without [CLS]/[SEP]: [{token, id, start, end}] (UTF-16 offsets into text). */
  pieces(text) {
    const out = [];
    let at = 0;
    if (this.addedPattern) {
      this.addedPattern.lastIndex = 0;
      for (const m of text.matchAll(this.addedPattern)) {
        this._segmentPieces(text, at, m.index, out);
        out.push({ token: m[0], id: this.added.get(m[0]), start: m.index, end: m.index + m[0].length });
        at = m.index + m[0].length;
      }
    }
    this._segmentPieces(text, at, text.length, out);
    return out;
  }

  /** The text as BertNormalizer leaves it (what WordPiece then reads), without the offsets. */
  normalize(text) {
    return this._normalize(text, 0, text.length)
      .map((ch) => ch[0])
      .join("");
  }

  /** Normalize text[from, to) character by character: [[normalized char, start, end], ...]. */
  _normalize(text, from, to) {
    // Pass 1: drop control characters, whitespace -> " ", space out CJK, decompose (NFD).
    let chars = [];
    let marks = 0; // marks in a row: two or more may need reordering
    let reorder = false;
    for (let i = from; i < to; ) {
      const cp = text.codePointAt(i);
      const start = i;
      i += cp > 0xffff ? 2 : 1;
      if (cp < 0x80) {
        // ASCII, the common case: no accents, no CJK, lower-cased at once
        if (this.cleanControl && ((cp < 0x20 && cp !== 9 && cp !== 10 && cp !== 13) || cp === 0x7f)) continue;
        let c = this.cleanControl && cp < 0x20 ? " " : text[start];
        if (this.lowercase && cp >= 65 && cp <= 90) c = String.fromCharCode(cp + 32);
        chars.push([c, start, i, true]);
        marks = 0;
        continue;
      }
      const c = String.fromCodePoint(cp);
      if (this.cleanControl && inRanges(DROP, cp)) continue;
      if (this.spaceChinese && isChinese(cp)) {
        const ideograph = this.stripAccents ? decompose(c) : c; // a compatibility ideograph -> its unified one
        chars.push([" ", start, i, true], [ideograph, start, i, false], [" ", start, i, true]);
        marks = 0;
        continue;
      }
      const parts = this.cleanControl && WHITESPACE.test(c) ? " " : this.stripAccents ? decompose(c) : c;
      for (const d of parts.length === 1 ? [parts] : Array.from(parts)) {
        chars.push([d, start, i, false]);
        marks = inRanges(NONSTARTER, d.codePointAt(0)) ? marks + 1 : 0;
        reorder ||= marks > 1;
      }
    }
    // Pass 2: canonical order of marks, accents stripped, lower-cased (each step on the whole text, as the crate).
    if (this.stripAccents && reorder) chars = reorderMarks(chars);
    const out = [];
    for (const [c, start, end, done] of chars) {
      if (done) out.push([c, start, end]);
      else if (!(this.stripAccents && inRanges(MARK, c.codePointAt(0)))) {
        // one character at a time, as Rust's char::to_lowercase (no final-sigma rule)
        const lower = this.lowercase ? c.toLowerCase() : c;
        if (lower.length === c.length) out.push([lower, start, end]);
        else for (const l of lower) out.push([l, start, end]);
      }
    }
    return out;
  }

  /** Pieces of one stretch of text with no added token in it, appended to `out`. */
  _segmentPieces(text, from, to, out) {
    if (from >= to) return;
    const chars = this._normalize(text, from, to);
    // BertPreTokenizer: words end at whitespace (dropped) and at punctuation (a word of its own).
    let word = [];
    const flush = () => {
      if (word.length) this._wordPieces(word, out);
      word = [];
    };
    for (const ch of chars) {
      if (WHITESPACE.test(ch[0])) {
        flush();
      } else if (inRanges(PUNCT, ch[0].codePointAt(0))) {
        flush();
        word = [ch];
        flush();
      } else {
        word.push(ch);
      }
    }
    flush();
  }

  /** WordPiece of one word (a list of [char, start, end]); each piece's offsets span its characters. */
  _wordPieces(word, out) {
    const pieces = this.wordpiece.encode([word.map((ch) => ch[0]).join("")]);
    // a word WordPiece cannot split is one [UNK] over the whole word
    if (pieces.length === 1 && pieces[0] === this.wordpiece.unk_token) {
      out.push({ token: pieces[0], id: this.special.unk, start: word[0][1], end: word[word.length - 1][2] });
      return;
    }
    let k = 0; // characters of the word used so far
    for (const piece of pieces) {
      const body = k > 0 ? piece.slice(this.prefix.length) : piece;
      const n = Array.from(body).length;
      out.push({ token: piece, id: this.tokenId(piece), start: word[k][1], end: word[k + n - 1][2] });
      k += n;
    }
  }

  /**
   * [CLS] a [SEP] (b [SEP]) cut to maxLength by BERT's longest-first rule (lab.tokenizer's encode):
   * {ids, typeIds, tokens, offsets, sequenceIds, truncated (tokens cut), sentenceBStart (or null)}.
   */
  encode(a, b = null, maxLength = this.maxLength) {
    cleanText(a, "text");
    if (b !== null) cleanText(b, "text_pair");
    const pa = this.pieces(a);
    const pb = b !== null ? this.pieces(b) : null;
    const nSpecial = pb ? 3 : 2;
    let keepA = pa.length;
    let keepB = pb ? pb.length : 0;
    if (maxLength !== null && maxLength !== undefined) {
      if (!Number.isInteger(maxLength) || maxLength < nSpecial) {
        const what = pb ? "a text pair" : "one text";
        throw new Error(
          `Tokenizer.encode: max_length=${maxLength} is too small for ${what} ` +
            `(it needs at least ${nSpecial} positions)`,
        );
      }
      [keepA, keepB] = truncateLongestFirst(keepA, keepB, maxLength - nSpecial, pb !== null);
    }
    const cls = { token: "[CLS]", id: this.special.cls, start: 0, end: 0 };
    const sep = { token: "[SEP]", id: this.special.sep, start: 0, end: 0 };
    const rows = [[cls, null, 0], ...pa.slice(0, keepA).map((p) => [p, 0, 0]), [sep, null, 0]];
    if (pb) rows.push(...pb.slice(0, keepB).map((p) => [p, 1, 1]), [sep, null, 1]);
    const typeIds = rows.map((r) => r[2]);
    const bStart = typeIds.indexOf(1);
    return {
      ids: rows.map((r) => r[0].id),
      typeIds,
      tokens: rows.map((r) => r[0].token),
      offsets: rows.map((r) => [r[0].start, r[0].end]),
      sequenceIds: rows.map((r) => r[1]),
      truncated: pa.length - keepA + (pb ? pb.length - keepB : 0),
      sentenceBStart: bStart >= 0 ? bStart : null,
    };
  }
}

/** How many tokens of A and B to keep within `budget`: one at a time off the longer (B on a tie). */
export function truncateLongestFirst(nA, nB, budget, pair) {
  if (nA + nB <= budget) return [nA, nB];
  if (!pair) return [budget, 0];
  while (nA + nB > budget) {
    if (nA > nB) nA -= 1;
    else nB -= 1;
  }
  return [nA, nB];
}

/** Load a TextEncoder from the site: the manifest entry's tokenizer file, fetched relative to `base`. */
export async function loadEncoder(entry, base = "") {
  const response = await fetch(base + entry.files.tokenizer);
  if (!response.ok) throw new Error(`could not load ${entry.files.tokenizer}: HTTP ${response.status}`);
  return new TextEncoder(await response.json(), entry);
}

// ------------------------------------------------------------------------------------------
// Fill-mask: lab.inspect.encoding.mask_positions and target_ids
// ------------------------------------------------------------------------------------------

/**
 * The [MASK] positions of enc = encoder.encode(text, textPair, maxLength); throws Python's messages.
 * task: the manifest entry's task (max_masks: at most this many [MASK]s per text, explore's MAX_MASKS).
 */
export function maskPositions(encoder, enc, task, text = null, textPair = null) {
  const { max_masks: maxMasks } = taskSettings(task, ["max_masks"], encoder.model);
  const positions = [];
  enc.ids.forEach((id, i) => id === encoder.special.mask && positions.push(i));
  if (!positions.length) throw new Error(noMaskMessage(encoder, enc, text, textPair));
  if (positions.length > maxMasks) {
    throw new Error(`${positions.length} [MASK] tokens: at most ${maxMasks} per text`);
  }
  return positions;
}

/** Why a window holds no [MASK]: none in the text, or cut off (then by how much to shorten). */
function noMaskMessage(encoder, enc, text, textPair) {
  const missing = "there is no [MASK] in the text: write [MASK] where a word should be predicted";
  if (!enc.truncated || text === null) return missing;
  const full = encoder.encode(text, textPair, null); // uncut: where the [MASK] was
  const first = full.ids.indexOf(encoder.special.mask);
  if (first < 0) return missing;
  const limit = enc.ids.length;
  const at = first + 1; // counting [CLS] as token 1
  const n = (x) => x.toLocaleString("en-US");
  const fix =
    textPair === null
      ? `shorten the text before the [MASK] by at least ${n(at - (limit - 1))} tokens`
      : "shorten the text before the [MASK]";
  return (
    `the [MASK] was cut off: this model reads at most ${n(limit)} tokens ([CLS] and [SEP] included), ` +
    `the text has ${n(full.ids.length)}, and its first [MASK] is token ${n(at)}; ${fix}, ` +
    `or put the [MASK] nearer the start`
  );
}

/** One vocabulary id per [MASK] from words the user typed (lab.inspect.encoding.target_ids). */
export function targetIds(encoder, targets, nMasks) {
  if (!Array.isArray(targets) || targets.length !== nMasks) {
    const shown = typeof targets === "string" ? pyRepr(targets) : JSON.stringify(targets);
    throw new Error(`targets must be a list of ${nMasks} word(s), one per [MASK], got ${shown}`);
  }
  return targets.map((word) => {
    const pieces = encoder.pieces(pyStrip(cleanText(word, "target"))).map((p) => p.token);
    if (pieces.length !== 1) {
      const list = `[${pieces.map(pyRepr).join(", ")}]`;
      throw new Error(
        `target ${pyRepr(word)} is ${pieces.length} WordPiece tokens ${list}; ` +
          `each target must be a single token of the vocabulary`,
      );
    }
    if (pieces[0] === "[UNK]") {
      throw new Error(`target ${pyRepr(word)} is not in the vocabulary (it reads as [UNK]): pick another word`);
    }
    return encoder.tokenId(pieces[0]) ?? encoder.special.unk;
  });
}
