#!/usr/bin/env python3
"""Reference outputs for clformer's F16-weight tests of the d2l encoder and decoder.

Loads tests/data/d2l_weights.safetensors into the seeds' model of tools/make_d2l_fixtures.py, in
float64, rounds the weight of every nn.Linear to fp16 (round to nearest even, as clformer's
loader does with weight_dtype CLF_F16: W_q, W_k, W_v, W_o, the FFN's dense1 and dense2 and the
decoder's output layer; biases, LayerNorms and embeddings unrounded), runs the inputs of
tests/data/d2l_fixtures.safetensors, and writes tests/data/d2l_fixtures_f16w.safetensors:
    enc_outputs_f16w (B, NS, D) F32   the encoder's outputs on the rounded weights
    logits_f16w      (B, NT, V) F32   the training-mode decoder logits on tgt, over
                                       enc_outputs_f16w
The existing fixture files are only read.

Run: python3 tools/make_d2l_f16_fixtures.py   (needs torch and safetensors from PyPI)
"""
import os
import sys

import torch
from torch import nn
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_d2l_fixtures as d2l  # noqa: E402  (the seeds' model classes)


@torch.no_grad()
def main():
    net = d2l.EncoderDecoder()
    net.load_state_dict({k: v.double() for k, v in
                         load_file(os.path.join(d2l.OUT, "d2l_weights.safetensors")).items()})
    net = net.double().eval()
    for mod in net.modules():
        if isinstance(mod, nn.Linear):
            mod.weight.copy_(mod.weight.to(torch.float16).to(torch.float64))
    fx = load_file(os.path.join(d2l.OUT, "d2l_fixtures.safetensors"))
    src, src_valid, tgt = fx["src"].long(), fx["src_valid_lens"].long(), fx["tgt"].long()
    enc = net.encoder(src, src_valid)
    logits, _ = net.decoder(tgt, [enc, src_valid, [None] * d2l.LAYERS])
    save_file({"enc_outputs_f16w": enc.float().contiguous(),
               "logits_f16w": logits.float().contiguous()},
              os.path.join(d2l.OUT, "d2l_fixtures_f16w.safetensors"))
    shift = float((logits - fx["logits"].double()).abs().max() / logits.abs().max())
    print("logits moved by %.3g of the largest by the rounding" % shift)


if __name__ == "__main__":
    main()
