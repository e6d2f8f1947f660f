#!/usr/bin/env python3
"""check_hf.py - an independent check of a Hugging Face folder that
`tempo export --format hf` wrote, with the Python standard library only
(tests/e2e/export_hf.sh runs it).

    check_hf.py HF_DIR TEMPO_MODEL_SAFETENSORS VAL_TXT VAL_TOK DTYPE

1. config.json holds what transformers' LlamaConfig / Qwen3Config read, with
   the values of the tempo config stored in the run's model.safetensors.
2. model.safetensors parses (a reader written here from the format's spec),
   holds exactly the tensors of the architecture (the table below: names and
   shapes as transformers' LlamaForCausalLM / Qwen3ForCausalLM define them),
   and every value equals tempo's weight (F32: bit for bit; F16: to half
   precision).
3. tokenizer.json's vocabulary, merges and pre-split regex re-encode the
   validation text (a BPE written here from the merges) to exactly the token
   ids tempo's prepare wrote to val.tok.
Exit 1 with a message on the first difference."""
import json, re, struct, sys

hf_dir, tempo_st, val_txt, val_tok, dtype = sys.argv[1:6]


def read_safetensors(path):
    b = open(path, 'rb').read()
    n = struct.unpack_from('<Q', b, 0)[0]
    header = json.loads(b[8:8 + n])
    meta = header.pop('__metadata__', {})
    data = b[8 + n:]
    out = {}
    for name, t in header.items():
        lo, hi = t['data_offsets']
        assert 0 <= lo <= hi <= len(data), (name, lo, hi, len(data))
        count = 1
        for d in t['shape']:
            count *= d
        size = {'F32': 4, 'F16': 2}[t['dtype']]
        assert hi - lo == count * size, (name, 'size')
        fmt = '<%d%s' % (count, 'f' if size == 4 else 'e')
        out[name] = (t['dtype'], t['shape'], struct.unpack_from(fmt, data, lo))
    return meta, out


tmeta, tempo = read_safetensors(tempo_st)
cfg = json.loads(tmeta['config'])
config = json.load(open(hf_dir + '/config.json'))
arch = 'qwen3' if cfg['qk_norm'] else 'llama'
V, C, L, F = cfg['vocab_size'], cfg['d_model'], cfg['n_layers'], cfg['d_ff']
H = cfg['n_heads']
Hkv = cfg['n_kv_heads'] or H
D = C // H
tied = bool(cfg['tied_head'])

# 1. config.json
want = {
    'architectures': ['Qwen3ForCausalLM' if arch == 'qwen3' else 'LlamaForCausalLM'],
    'model_type': arch, 'vocab_size': V, 'hidden_size': C, 'intermediate_size': F,
    'num_hidden_layers': L, 'num_attention_heads': H, 'num_key_value_heads': Hkv, 'head_dim': D,
    'max_position_embeddings': cfg['context'], 'hidden_act': 'silu', 'attention_bias': False,
    'tie_word_embeddings': tied, 'bos_token_id': V - 1, 'eos_token_id': V - 1,
    'torch_dtype': {'f32': 'float32', 'f16': 'float16'}[dtype],
}
for k, v in want.items():
    assert config.get(k) == v, ('config.json', k, config.get(k), v)
assert abs(config['rms_norm_eps'] - cfg['norm_eps']) <= 1e-6 * cfg['norm_eps'], 'rms_norm_eps'
assert abs(config['rope_theta'] - cfg['rope_theta']) <= 1e-6 * cfg['rope_theta'], 'rope_theta'

# 2. tensors: the architecture's names and shapes ([out, in], as torch.nn.Linear stores them)
table = {'model.embed_tokens.weight': ([V, C], 'tok_emb'), 'model.norm.weight': ([C], 'final_norm')}
if not tied:
    table['lm_head.weight'] = ([V, C], 'head')
for i in range(L):
    p, t = 'model.layers.%d.' % i, 'layers.%d.' % i
    table.update({
        p + 'input_layernorm.weight': ([C], t + 'attn_norm'),
        p + 'self_attn.q_proj.weight': ([H * D, C], t + 'wq'),
        p + 'self_attn.k_proj.weight': ([Hkv * D, C], t + 'wk'),
        p + 'self_attn.v_proj.weight': ([Hkv * D, C], t + 'wv'),
        p + 'self_attn.o_proj.weight': ([C, H * D], t + 'wo'),
        p + 'post_attention_layernorm.weight': ([C], t + 'mlp_norm'),
        p + 'mlp.gate_proj.weight': ([F, C], t + 'w_gate'),
        p + 'mlp.up_proj.weight': ([F, C], t + 'w_up'),
        p + 'mlp.down_proj.weight': ([C, F], t + 'w_down'),
    })
    if arch == 'qwen3':
        table[p + 'self_attn.q_norm.weight'] = ([D], t + 'q_norm')
        table[p + 'self_attn.k_norm.weight'] = ([D], t + 'k_norm')
meta, hf = read_safetensors(hf_dir + '/model.safetensors')
assert meta.get('format') == 'pt', ('metadata format', meta.get('format'))
assert set(hf) == set(table), ('tensor names', sorted(set(hf) ^ set(table)))
for name, (shape, tname) in table.items():
    dt, s, vals = hf[name]
    assert s == shape, (name, s, shape)
    assert dt == {'f32': 'F32', 'f16': 'F16'}[dtype], (name, dt)
    ref = tempo[tname][2]
    if dtype == 'f32':
        assert vals == ref, (name, 'values differ')
    else:
        for a, r in zip(vals, ref):
            assert abs(a - r) <= 1e-3 * abs(r) + 6e-8, (name, a, r)

# 3. tokenizer.json
tok = json.load(open(hf_dir + '/tokenizer.json'))
vocab, merges = tok['model']['vocab'], tok['model']['merges']
assert tok['model']['type'] == 'BPE' and len(vocab) == V - 1 and len(merges) == V - 1 - 256
assert tok['added_tokens'][0]['id'] == V - 1 and tok['added_tokens'][0]['special']
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
byte_char = {b: chr(c) for b, c in zip(bs, cs)}
pattern = tok['pre_tokenizer']['pretokenizers'][0]['pattern']['Regex']
# Oniguruma's \x{HHHH} is Python's \U0000HHHH
regex = re.compile(re.sub(r'\\x\{([0-9A-Fa-f]+)\}', lambda m: '\\U%08x' % int(m.group(1), 16), pattern))
rank = {tuple(m.split(' ')): i for i, m in enumerate(merges)}


def bpe(piece):
    parts = [byte_char[b] for b in piece.encode('utf-8')]
    while len(parts) > 1:
        best = min(range(len(parts) - 1), key=lambda i: rank.get((parts[i], parts[i + 1]), 1 << 30))
        if (parts[best], parts[best + 1]) not in rank:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    return [vocab[p] for p in parts]


text = open(val_txt, encoding='utf-8').read()
docs = [d for d in re.split(r'(?m)^\x1e\n', text) if d]  # prepare skips empty documents
ids = [V - 1]
for d in docs:
    for piece in regex.findall(d):
        ids += bpe(piece)
    ids.append(V - 1)
b = open(val_tok, 'rb').read()
count = struct.unpack_from('<Q', b, 24)[0]
want_ids = list(struct.unpack_from('<%dH' % count, b, 64))
assert ids == want_ids, ('tokenizer.json re-encodes the val text differently', len(ids), len(want_ids),
                         next(i for i, (x, y) in enumerate(zip(ids + [-1], want_ids + [-1])) if x != y))
print('hf %s %s: config.json, %d tensors (names, shapes, values) and tokenizer.json (%d val tokens) agree'
      % (arch, dtype, len(table), len(ids)))
