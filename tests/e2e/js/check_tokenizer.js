// check_tokenizer.js - tokenizer.json of `tempo export --format hf` in Hugging
// Face's own tokenizers library (its Node binding; tools/hf_tokenizers/setup.sh):
// the validation text, document by document, must encode to exactly the ids
// tempo's prepare wrote to val.tok (separators between documents).
//   node check_tokenizer.js TOKENIZERS_DIR TOKENIZER_JSON VAL_TXT VAL_TOK
const [dir, json, valTxt, valTok] = process.argv.slice(2);
const { Tokenizer } = require(dir);
const fs = require('fs');
(async () => {
  const tok = Tokenizer.fromFile(json);
  const sep = JSON.parse(fs.readFileSync(json, 'utf8')).added_tokens[0].id;
  const docs = fs.readFileSync(valTxt, 'utf8').split(/^\x1e\n/m).filter((d) => d.length > 0);
  const b = fs.readFileSync(valTok);
  const n = Number(b.readBigUInt64LE(24));
  const want = [];
  for (let i = 0; i < n; i++) want.push(b.readUInt16LE(64 + 2 * i));
  const ids = [sep];
  for (const d of docs) {
    const e = await tok.encode(d, null, { addSpecialTokens: false });
    for (const id of e.getIds()) ids.push(id); // (a spread overflows the stack on long documents)
    ids.push(sep);
  }
  for (let i = 0; i < Math.max(ids.length, want.length); i++)
    if (ids[i] !== want[i]) {
      console.error(`tokenizers: ${ids.length} ids against tempo's ${want.length}; first difference at ${i}`);
      process.exit(1);
    }
  console.log(`tokenizers (Hugging Face's library): tokenizer.json encodes the val text to tempo's ${ids.length} ids`);
})().catch((e) => { console.error(String(e)); process.exit(1); });
