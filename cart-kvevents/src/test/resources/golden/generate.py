#!/usr/bin/env python3
"""Writes the golden KV-event payloads with Debian's python3-msgpack (a msgpack implementation other than
the one CART reads with), in vLLM's field order, and expected.json, what each must decode to.

Run from this directory:  python3 generate.py   (needs: apt-get install python3-msgpack)
The files it wrote are committed; the test (GoldenVectorsTest) reads them and never runs this script.
"""
import hashlib
import json

import msgpack

TS = 1760000000.25


def digest(i):
    """A 32-byte block hash as vLLM sends it with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0."""
    return hashlib.sha256(b"block-%d" % i).digest()


def low64(d):
    """The integer form: the digest's last 8 bytes, big-endian (unsigned)."""
    return int.from_bytes(d[24:], "big")


def signed(v):
    return v - (1 << 64) if v >= (1 << 63) else v


TOKENS = list(range(1000, 1032))  # two blocks of 16 tokens
H = [digest(i) for i in range(6)]
# make sure both sides of 2^63 are exercised by the integer form
assert any(low64(d) >= 1 << 63 for d in H) and any(low64(d) < 1 << 63 for d in H), [low64(d) for d in H]


def hashes(idx, as_bytes):
    return [H[i] if as_bytes else low64(H[i]) for i in idx]


def array_batch(as_bytes):
    # positional: ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium,
    #              lora_name, extra_keys, group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window]
    return [
        TS,
        [
            ["BlockStored", hashes([0, 1], as_bytes), None, TOKENS, 16, None, "GPU"],
            ["BlockStored", hashes([2], as_bytes), hashes([1], as_bytes)[0], list(range(2000, 2016)), 16, None, "CPU"],
            ["BlockRemoved", hashes([0], as_bytes), "GPU"],
            ["AllBlocksCleared"],
        ],
        0,
    ]


def map_batch(as_bytes):
    return [
        TS,
        [
            {
                "type": "BlockStored",
                "block_hashes": hashes([3, 4], as_bytes),
                "parent_block_hash": None,
                "token_ids": TOKENS,
                "block_size": 16,
                "lora_id": None,
                "medium": "GPU",
                "lora_name": "sql",
                "extra_keys": [["sql", "salt-1"], ["sql"]],
                "group_idx": 0,
                "kv_cache_spec_kind": "full_attention",
            },
            {
                "type": "BlockStored",
                "block_hashes": hashes([5], as_bytes),
                "parent_block_hash": hashes([4], as_bytes)[0],
                "token_ids": list(range(3000, 3016)),
                "block_size": 16,
                "lora_id": None,
                "medium": None,
                "group_idx": 1,
                "kv_cache_spec_kind": "sliding_window",
                "kv_cache_spec_sliding_window": 4096,
            },
            {"type": "BlockRemoved", "block_hashes": hashes([3], as_bytes), "medium": "CPU_PINNED", "group_idx": 0},
            {"type": "AllBlocksCleared"},
        ],
        1,
    ]


def old_batch():
    # the oldest shape: two elements, five BlockStored fields, signed 64-bit hashes
    return [
        TS,
        [["BlockStored", [signed(low64(H[0])), signed(low64(H[1]))], None, TOKENS, 16, None]],
    ]


def unknown_batch():
    return [
        TS,
        [
            ["BlockStored", [low64(H[0])], None, TOKENS[:16], 16, None, "GPU", None, None, 0, None, None, "locality-x"],
            ["SomethingNew", 1, 2, 3],
            {"type": "BlockRemoved", "block_hashes": [low64(H[0])], "medium": "GPU", "added_later": [1, 2]},
            ["BlockRemoved", [H[1][:20]], "GPU"],  # a digest of the wrong length: the event is dropped
        ],
        0,
        "trailing",
    ]


def expected_stored(idx, parent, tokens, tier, lora=None, salt=None, group=0, full=True):
    return {
        "type": "stored",
        "hashes": [str(low64(H[i])) for i in idx],
        "parent": None if parent is None else str(low64(H[parent])),
        "tokens": tokens,
        "blockSize": 16,
        "lora": lora,
        "salt": salt,
        "tier": tier,
        "group": group,
        "fullAttention": full,
    }


def expected_removed(idx, tier, group=0):
    return {"type": "removed", "hashes": [str(low64(H[i])) for i in idx], "tier": tier, "group": group}


ARRAY_EXPECTED = {
    "ts": TS,
    "dpRank": 0,
    "events": [
        expected_stored([0, 1], None, TOKENS, "GPU"),
        expected_stored([2], 1, list(range(2000, 2016)), "OFFLOAD"),
        expected_removed([0], "GPU"),
        {"type": "cleared"},
    ],
    "skippedFields": 0,
    "unknownTags": 0,
    "badEvents": 0,
}
MAP_EXPECTED = {
    "ts": TS,
    "dpRank": 1,
    "events": [
        expected_stored([3, 4], None, TOKENS, "GPU", lora="sql", salt="salt-1"),
        expected_stored([5], 4, list(range(3000, 3016)), "GPU", group=1, full=False),
        expected_removed([3], "OFFLOAD"),
        {"type": "cleared"},
    ],
    "skippedFields": 0,
    "unknownTags": 0,
    "badEvents": 0,
}

vectors = {
    "array-int.msgpack": (array_batch(False), ARRAY_EXPECTED),
    "array-bytes.msgpack": (array_batch(True), ARRAY_EXPECTED),
    "map-int.msgpack": (map_batch(False), MAP_EXPECTED),
    "map-bytes.msgpack": (map_batch(True), MAP_EXPECTED),
    "old-signed.msgpack": (
        old_batch(),
        {
            "ts": TS,
            "dpRank": -1,
            "events": [expected_stored([0, 1], None, TOKENS, "GPU")],
            "skippedFields": 0,
            "unknownTags": 0,
            "badEvents": 0,
        },
    ),
    "unknown.msgpack": (
        unknown_batch(),
        {
            "ts": TS,
            "dpRank": 0,
            "events": [expected_stored([0], None, TOKENS[:16], "GPU"), expected_removed([0], "GPU")],
            "skippedFields": 3,
            "unknownTags": 1,
            "badEvents": 1,
        },
    ),
}

expected = {}
for name, (batch, exp) in vectors.items():
    with open(name, "wb") as f:
        f.write(msgpack.packb(batch, use_bin_type=True))
    expected[name] = exp
with open("expected.json", "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
print("wrote", ", ".join(sorted(expected)))
