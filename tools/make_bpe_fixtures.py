#!/usr/bin/env python3
"""Reference data for clformer's BPE tokenizer tests, from Hugging Face's tokenizers library.

Trains five small BPE tokenizers on a varied multilingual text (below) and writes into
tests/data/bpe/:
  gpt2.json      byte-level BPE, ByteLevel pre-tokenizer (GPT-2's split pattern), <|endoftext|>
  llama3.json    byte-level BPE, Split on Llama 3's pattern + ByteLevel, ignore_merges, a
                 <|begin_of_text|> template and <|eot_id|>
  qwen2.json     byte-level BPE, NFC normalizer, Split on Qwen2's pattern (single digits) +
                 ByteLevel
  llama2.json    SentencePiece-style BPE: normalizer Prepend + Replace to U+2581, byte_fallback
                 (<0x00>..<0xFF> added to the vocabulary; characters not in the training
                 text, such as some emoji and rare scripts, fall back to bytes),
                 unk, decoder Replace / ByteFallback / Fuse / Strip, a <s> template
  mistral.json   the same model with a Metaspace pre-tokenizer (prepend_scheme first, split)
                 and a Metaspace decoder
  cases.json     test texts (emoji, CJK, combining marks, digits, whitespace runs, code, special
                 tokens inside text, invalid-looking input) and, per tokenizer, the ids without
                 and with the template, the decoded text (special tokens kept, and skipped),
                 and DecodeStream's output per id.

Run: python3 tools/make_bpe_fixtures.py   (needs tokenizers from PyPI)
"""
import json
import os

os.environ["RAYON_NUM_THREADS"] = "1"  # one training thread: the same merges on every run
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import tokenizers  # noqa: E402
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers  # noqa
from tokenizers import processors, trainers  # noqa: E402
from tokenizers.decoders import DecodeStream  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "bpe")

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CORPUS = """The quick brown fox jumps over the lazy dog. It's what they're doing, isn't it?
We'll see what you've done; I'd say I'm done. THE QUICK BROWN FOX, Don'T SHOUT.
Le cœur a ses raisons que la raison ne connaît point. Ça va très bien, merci !
Über den Wolken muss die Freiheit wohl grenzenlos sein. Größe, Straße, Mädchen.
Быстрая коричневая лиса прыгает через ленивую собаку. Привет, как дела?
Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.
الثعلب البني السريع يقفز فوق الكلب الكسول. مرحبا بالعالم
तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है। नमस्ते दुनिया
敏捷的棕色狐狸跳过了懒狗。你好，世界！今天天气很好。我们一起学习机器学习。
いろはにほへと ちりぬるを。こんにちは、世界。東京は日本の首都です。
빠른 갈색 여우가 게으른 개를 뛰어넘습니다. 안녕하세요 세계
Tiếng Việt có dấu: Hà Nội, Sài Gòn, người Việt Nam.
Numbers: 0 1 12 123 1234 12345 3.14159 2,718 1e-9 0x1F 100% $42.50 -7
def square(x):
    return x ** 2  # the square
for (int i = 0; i < n; i++) { sum += a[i] * b[i]; }
if __name__ == "__main__":\n\tprint("hello, world")
Emoji: 😀 😃 👍 🎉 ❤️ 🇫🇷 👩‍💻 🤖
tabs\tand  double  spaces   and\nnew lines\r\n and more.
""" * 3

TEXTS = [
    "",
    "Hello world",
    " Hello world",
    "  leading and trailing spaces  ",
    "Hello, world! How are you today?",
    "It's a dog's life; they're sure we'll see. I'M LOUD, YOU'RE LOUD, don'T.",
    "The year 2024 has 366 days: 1234567890 and 3.14159, 12,345.67 and 007.",
    "Whitespace runs:    four spaces\ttab\t\ttwo tabs\n\nnewlines\r\nCRLF   \n  end   ",
    "def f(x):\n    return x**2  # square\n\nprint(f(12))",
    "{\"key\": [1, 2, 3], 'other': None}  <html><body>text</body></html>",
    "敏捷的棕色狐狸跳过了懒狗。你好，世界！",
    "東京タワーは高いです。ひらがなとカタカナ。",
    "한국어 텍스트와 English mixed 텍스트.",
    "Emoji: 😀👍🏽 family 👨‍👩‍👧 flag 🇯🇵 heart ❤️ and 🦄 unicorn",
    "Combining marks: e\u0301 a\u0300 n\u0303 o\u0308 (decomposed) vs é à ñ ö",
    "Tiếng Việt có dấu: Hà Nội.",
    "NFC: a\u0323\u0302 a\u0302\u0323 \u1100\u1161\u11a8 \u2126 \u0958 \u212b A\u030a "
    "\u1e9b\u0323 q\u0307\u0323 \u0344 e\u0301\u0301",
    "Русский текст и ελληνικά и العربية и हिन्दी.",
    "Rare characters not trained: ꙮ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ☃ ⅓ ¾ Ⅻ",
    "special <|endoftext|> inside<|endoftext|>text",
    "<|begin_of_text|>Hello<|eot_id|> and <s> legacy </s> tokens",
    "a\u00a0b\u2003c\u3000d (no-break, em and ideographic spaces)",
    "\n\n\n",
    "   ",
    "x",
    "😀",
    "Mixed123numbers456and789letters",
    "can't won't shouldn't y'all O'Neil 'quoted' ’curly’",
]


def train(tok, trainer):
    tok.train_from_iterator(CORPUS.splitlines(), trainer=trainer)
    return tok


def add_byte_tokens(tok):
    """Adds <0x00>..<0xFF> to the model's vocabulary (SentencePiece byte fallback)."""
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    n = max(max(vocab.values()), max(a["id"] for a in j["added_tokens"])) + 1
    for b in range(256):
        name = "<0x%02X>" % b
        if name not in vocab:
            vocab[name] = n
            n += 1
    return Tokenizer.from_str(json.dumps(j))


def make():
    toks = {}
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.ByteLevel(trim_offsets=True)
    toks["gpt2"] = train(t, trainers.BpeTrainer(
        vocab_size=700, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))

    for name, pattern in (("llama3", LLAMA3), ("qwen2", QWEN2)):
        t = Tokenizer(models.BPE(ignore_merges=name == "llama3"))
        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
        t.decoder = decoders.ByteLevel()
        if name == "qwen2":
            t.normalizer = normalizers.NFC()
        specials = ["<|begin_of_text|>", "<|eot_id|>"] if name == "llama3" else ["<|endoftext|>"]
        t = train(t, trainers.BpeTrainer(vocab_size=800, special_tokens=specials,
                                         show_progress=False,
                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        if name == "llama3":
            bos = t.token_to_id("<|begin_of_text|>")
            t.post_processor = processors.Sequence([
                processors.ByteLevel(trim_offsets=False),
                processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                              special_tokens=[("<|begin_of_text|>", bos)])])
        toks[name] = t

    for name in ("llama2", "mistral"):
        t = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
        if name == "llama2":
            t.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                                 normalizers.Replace(" ", "\u2581")])
            t.decoder = decoders.Sequence([decoders.Replace("\u2581", " "),
                                           decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
            # trained on words (as SentencePiece does), encoded without a pre-tokenizer
            t.pre_tokenizer = pre_tokenizers.Metaspace("\u2581", prepend_scheme="first",
                                                       split=True)
        else:
            t.pre_tokenizer = pre_tokenizers.Metaspace("\u2581", prepend_scheme="first",
                                                       split=True)
            t.decoder = decoders.Metaspace("\u2581", prepend_scheme="first")
        t = train(t, trainers.BpeTrainer(vocab_size=900, special_tokens=["<unk>", "<s>", "</s>"],
                                         show_progress=False))
        if name == "llama2":
            t.pre_tokenizer = None
        t = add_byte_tokens(t)
        bos = t.token_to_id("<s>")
        t.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                         special_tokens=[("<s>", bos)])
        toks[name] = t
    return toks


def main():
    os.makedirs(OUT, exist_ok=True)
    toks = make()
    results = {}
    for name, t in toks.items():
        t.save(os.path.join(OUT, name + ".json"))
        t = Tokenizer.from_file(os.path.join(OUT, name + ".json"))  # as clformer reads it
        rows = []
        for text in TEXTS:
            ids = t.encode(text, add_special_tokens=False).ids
            ids_special = t.encode(text).ids
            ds = DecodeStream(skip_special_tokens=False)
            rows.append({
                "ids": ids,
                "ids_special": ids_special,
                "decoded": t.decode(ids, skip_special_tokens=False),
                "decoded_skip": t.decode(ids_special, skip_special_tokens=True),
                "stream": [ds.step(t, i) or "" for i in ids],
            })
        results[name] = rows
        print(name, t.get_vocab_size(), sum(len(r["ids"]) for r in rows), "ids")
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizers": tokenizers.__version__, "texts": TEXTS, "results": results}, f,
                  ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
