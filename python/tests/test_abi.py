"""The ctypes structs of clformer._lib against the C headers' layouts, as the C compiler sees
them (tests/abi_layout.c, built as clformer-abi-layout; $CLFORMER_ABI_LAYOUT names it)."""

from __future__ import annotations

import ctypes
import os
import subprocess

import pytest

from clformer import _lib
from conftest import CI


def test_structs_match_the_headers():
    prog = os.environ.get("CLFORMER_ABI_LAYOUT")
    if not prog:
        if CI:
            pytest.fail("CLFORMER_ABI_LAYOUT is not set (tests/python_test.sh sets it)")
        pytest.skip("CLFORMER_ABI_LAYOUT is not set")
    lines = subprocess.run([prog], check=True, capture_output=True, text=True).stdout.split("\n")
    checked = 0
    for line in filter(None, lines):
        name, value = line.split()
        struct, _, field = name.partition(".")
        cls = _lib.STRUCTS[struct]
        got = getattr(cls, field).offset if field else ctypes.sizeof(cls)
        assert got == int(value), f"{name}: ctypes {got}, C {value}"
        checked += 1
    assert checked >= 40
