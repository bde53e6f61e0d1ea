#!/usr/bin/env python3
"""A SentencePiece tokenizer in a GGUF file, as llama.cpp's converter writes Llama 2's and
Mistral 7B's (tokenizer.ggml.model "llama"), with sentencepiece's own ids as the reference.

Trains a small BPE model with the sentencepiece package the way Llama's was set up (identity
normalization, whitespace kept, a dummy prefix, digits split, byte fallback), then writes into
tests/data/bpe/:
    spm.gguf       tokenizer.ggml.model "llama": tokens, scores and token types in id order
                   (NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE as the converter maps
                   sentencepiece's piece kinds), bos/eos/unk ids, add_bos_token true,
                   add_space_prefix true
    spm_cases.json for each text of cases.json: sentencepiece's ids (no BOS) and its decoding

The texts contain no <s> / </s> (sentencepiece does not match control pieces inside text).

Run: python3 tools/make_spm_fixtures.py   (needs sentencepiece, gguf and numpy from PyPI)
"""
import io
import json
import os

import gguf
import sentencepiece as spm

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "bpe")


def main():
    texts = json.load(open(os.path.join(OUT, "cases.json")))["texts"]
    texts = [t for t in texts if "<s>" not in t and "</s>" not in t]
    corpus = "\n".join(t.replace("\n", " ") for t in texts for _ in range(3))
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus.split("\n")), model_writer=model, model_type="bpe",
        vocab_size=1000, character_coverage=0.98, byte_fallback=True, split_digits=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, allow_whitespace_only_pieces=True, num_threads=1,
        max_sentence_length=100000, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())

    wr = gguf.GGUFWriter(os.path.join(OUT, "spm.gguf"), "llama")
    tokens, scores, types = [], [], []
    for i in range(sp.vocab_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        t = gguf.TokenType.NORMAL
        if sp.is_unknown(i):
            t = gguf.TokenType.UNKNOWN
        elif sp.is_control(i):
            t = gguf.TokenType.CONTROL
        elif sp.is_unused(i):
            t = gguf.TokenType.UNUSED
        elif sp.is_byte(i):
            t = gguf.TokenType.BYTE
        types.append(t)
    wr.add_tokenizer_model("llama")
    wr.add_tokenizer_pre("default")
    wr.add_token_list(tokens)
    wr.add_token_scores(scores)
    wr.add_token_types(types)
    wr.add_bos_token_id(sp.bos_id())
    wr.add_eos_token_id(sp.eos_id())
    wr.add_unk_token_id(sp.unk_id())
    wr.add_add_bos_token(True)
    wr.add_add_eos_token(False)
    wr.add_add_space_prefix(True)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()

    cases = [{"text": t, "ids": sp.encode(t), "decoded": sp.decode(sp.encode(t))} for t in texts]
    with open(os.path.join(OUT, "spm_cases.json"), "w") as f:
        json.dump({"sentencepiece": spm.__version__, "bos": sp.bos_id(), "cases": cases}, f,
                  ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
