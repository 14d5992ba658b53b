package dev.cart.kvevents;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * Decodes one msgpack {@code EventBatch} as vLLM (and SGLang) publish it: {@code [ts, events, dp_rank?]},
 * each event a tagged union in either encoding, positional ({@code ["BlockStored", fields...]}, trailing
 * defaults left out) or a map ({@code {"type": "BlockStored", name: value...}}).
 *
 * <p>Design: a field reader always consumes its whole value, whatever it holds, so a bad field (a hash of
 * the wrong length, a string where numbers belong) spoils only its own event: the event is dropped and
 * counted, and decoding goes on with the next one. Unknown fields and event tags are skipped and counted,
 * never fatal (newer engines add fields). A batch that cannot be read to its end (truncated, not an array,
 * an element count larger than the bytes left could hold) is refused whole, before any of its events is
 * applied, so a damaged payload never half-applies. Hashes arrive as integers (unsigned 64-bit, or signed
 * from older producers: the same 64 bits either way) or as 32-byte digests, whose last 8 bytes, big-endian,
 * are the number the integer form carries.
 *
 * <p>Stateless; thread-safe.
 */
final class BatchDecoder {

    /** Most events in one batch, blocks in one event, and token ids in one event that are believed. */
    static final int MAX_EVENTS = 1 << 16;

    static final int MAX_BLOCKS = 1 << 16;
    static final int MAX_TOKENS = 1 << 22;

    /** A decoded batch. */
    record Batch(double ts, int dpRank, List<KvEvent> events) {}

    /** What decoding one batch skipped or dropped (added to the stream's counters). */
    static final class Tally {
        int skippedFields;
        int unknownTags;
        int badEvents;
    }

    /** A batch that cannot be read: refused whole. */
    static final class MalformedBatchException extends Exception {
        private static final long serialVersionUID = 1L;

        MalformedBatchException(String message) {
            super(message, null, false, false);
        }
    }

    private BatchDecoder() {}

    /**
     * Decodes {@code payload}.
     *
     * @throws MalformedBatchException if the batch cannot be read to its end
     */
    static Batch decode(byte[] payload, Tally tally) throws MalformedBatchException {
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            Reader r = new Reader(u, payload.length, tally);
            Batch b = r.batch();
            if (u.hasNext()) {
                throw new MalformedBatchException("bytes after the batch");
            }
            return b;
        } catch (IOException | MessagePackException | ClassCastException e) {
            throw new MalformedBatchException(
                    "unreadable batch: " + e.getClass().getSimpleName());
        }
    }

    /** One pass over one payload. */
    private static final class Reader {
        final MessageUnpacker u;
        final long length;
        final Tally tally;
        /** Set by a field reader that consumed a value it could not use: the event is dropped. */
        boolean bad;

        Reader(MessageUnpacker u, long length, Tally tally) {
            this.u = u;
            this.length = length;
            this.tally = tally;
        }

        /** An element count, refused when the bytes left could not hold that many elements. */
        int count(int n, int max) throws MalformedBatchException {
            if (n < 0 || n > length - u.getTotalReadBytes() || n > max) {
                throw new MalformedBatchException("element count " + n + " out of range");
            }
            return n;
        }

        Batch batch() throws IOException, MalformedBatchException {
            if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
                throw new MalformedBatchException("a batch is an array");
            }
            int n = count(u.unpackArrayHeader(), 64);
            if (n < 2) {
                throw new MalformedBatchException("a batch has at least a time and events");
            }
            double ts = number();
            if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
                throw new MalformedBatchException("a batch's events are an array");
            }
            int events = count(u.unpackArrayHeader(), MAX_EVENTS);
            List<KvEvent> out = new ArrayList<>(events);
            for (int i = 0; i < events; i++) {
                bad = false;
                KvEvent e = event();
                if (e != null && !bad) {
                    out.add(e);
                } else if (bad) {
                    tally.badEvents++;
                }
            }
            int dp = -1;
            if (n >= 3) {
                if (u.tryUnpackNil()) {
                    dp = -1;
                } else if (u.getNextFormat().getValueType() == ValueType.INTEGER) {
                    long v = u.unpackLong();
                    dp = v < 0 || v > Integer.MAX_VALUE ? -1 : (int) v;
                } else {
                    u.skipValue();
                    tally.skippedFields++;
                }
            }
            for (int i = 3; i < n; i++) {
                u.skipValue();
                tally.skippedFields++;
            }
            return new Batch(ts, dp, out);
        }

        double number() throws IOException, MalformedBatchException {
            ValueType t = u.getNextFormat().getValueType();
            if (t == ValueType.FLOAT) {
                return u.unpackDouble();
            }
            if (t == ValueType.INTEGER) {
                return u.unpackLong();
            }
            throw new MalformedBatchException("a batch's time is a number");
        }

        /** One event; null for an unknown tag (skipped) or a bad event ({@link #bad} set). */
        @Nullable
        KvEvent event() throws IOException, MalformedBatchException {
            ValueType t = u.getNextFormat().getValueType();
            if (t == ValueType.ARRAY) {
                return positional(count(u.unpackArrayHeader(), 64));
            }
            if (t == ValueType.MAP) {
                return named(count(u.unpackMapHeader(), 64));
            }
            u.skipValue();
            bad = true;
            return null;
        }

        /** {@code [tag, fields...]}, fields in declaration order. */
        @Nullable
        KvEvent positional(int n) throws IOException, MalformedBatchException {
            if (n == 0) {
                bad = true;
                return null;
            }
            String tag = stringOrNull();
            Fields f = new Fields();
            int known = tag == null ? 0 : knownFields(tag);
            for (int i = 1; i < n; i++) {
                if (tag != null && i <= known) {
                    f.read(this, fieldName(tag, i));
                } else {
                    u.skipValue();
                    if (tag != null && (known > 0 || tag.equals("AllBlocksCleared"))) {
                        tally.skippedFields++;
                    }
                }
            }
            return f.build(this, tag);
        }

        /** {@code {"type": tag, name: value...}}. */
        @Nullable
        KvEvent named(int n) throws IOException, MalformedBatchException {
            @Nullable String tag = null;
            Fields f = new Fields();
            for (int i = 0; i < n; i++) {
                String name = stringOrNull();
                if (name == null) {
                    u.skipValue();
                    bad = true;
                } else if (name.equals("type")) {
                    tag = stringOrNull();
                } else if (!f.read(this, name)) {
                    u.skipValue();
                    tally.skippedFields++;
                }
            }
            return f.build(this, tag);
        }

        /** A string value; null (and {@link #bad}) for anything else, which is consumed. */
        @Nullable
        String stringOrNull() throws IOException {
            MessageFormat f = u.getNextFormat();
            if (f.getValueType() == ValueType.STRING) {
                return u.unpackString();
            }
            if (f.getValueType() == ValueType.BINARY) {
                byte[] b = u.readPayload(u.unpackBinaryHeader());
                return new String(b, StandardCharsets.UTF_8);
            }
            u.skipValue();
            bad = true;
            return null;
        }

        /** A string or nil; anything else is consumed and spoils the event. */
        @Nullable
        String optionalString() throws IOException {
            if (u.tryUnpackNil()) {
                return null;
            }
            return stringOrNull();
        }

        /** An integer or nil ({@code absent}); anything else is consumed and spoils the event. */
        long optionalInt(long absent) throws IOException {
            if (u.tryUnpackNil()) {
                return absent;
            }
            MessageFormat f = u.getNextFormat();
            if (f.getValueType() == ValueType.INTEGER) {
                return f == MessageFormat.UINT64 ? u.unpackBigInteger().longValue() : u.unpackLong();
            }
            u.skipValue();
            bad = true;
            return absent;
        }

        /** One block hash: an integer, or a 32-byte digest (its last 8 bytes, big-endian). */
        long hash() throws IOException {
            MessageFormat f = u.getNextFormat();
            ValueType t = f.getValueType();
            if (t == ValueType.INTEGER) {
                return f == MessageFormat.UINT64 ? u.unpackBigInteger().longValue() : u.unpackLong();
            }
            if (t == ValueType.BINARY || t == ValueType.STRING) {
                int len = t == ValueType.BINARY ? u.unpackBinaryHeader() : u.unpackRawStringHeader();
                if (len < 0 || len > length - u.getTotalReadBytes()) {
                    throw new IOException("digest longer than the payload");
                }
                byte[] b = u.readPayload(len);
                if (len != 32) {
                    bad = true;
                    return 0;
                }
                long v = 0;
                for (int i = 24; i < 32; i++) {
                    v = (v << 8) | (b[i] & 0xFF);
                }
                return v;
            }
            u.skipValue();
            bad = true;
            return 0;
        }

        /** A list of hashes; a nil or a non-list spoils the event. */
        long[] hashes() throws IOException, MalformedBatchException {
            if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
                u.skipValue();
                bad = true;
                return new long[0];
            }
            int n = count(u.unpackArrayHeader(), MAX_BLOCKS);
            long[] out = new long[n];
            for (int i = 0; i < n; i++) {
                out[i] = hash();
            }
            return out;
        }

        /** A list of token ids (nil: none). */
        int[] tokens() throws IOException, MalformedBatchException {
            if (u.tryUnpackNil()) {
                return new int[0];
            }
            if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
                u.skipValue();
                bad = true;
                return new int[0];
            }
            int n = count(u.unpackArrayHeader(), MAX_TOKENS);
            int[] out = new int[n];
            for (int i = 0; i < n; i++) {
                MessageFormat f = u.getNextFormat();
                if (f.getValueType() != ValueType.INTEGER || f == MessageFormat.UINT64) {
                    u.skipValue();
                    bad = true;
                    continue;
                }
                long v = u.unpackLong();
                if (v < Integer.MIN_VALUE || v > 0xFFFF_FFFFL) {
                    bad = true;
                }
                out[i] = (int) v;
            }
            return out;
        }

        /**
         * The per-block extra keys: each entry nil or a list. Strings equal to the adapter's name are what
         * CART reproduces; on the first block of a chain, one further string is the {@code cache_salt}; any
         * other content (multimodal identifiers, prompt embeddings) is folded into the block's digest.
         */
        @Nullable
        ExtraKeys extraKeys() throws IOException, MalformedBatchException {
            if (u.tryUnpackNil()) {
                return null;
            }
            if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
                u.skipValue();
                bad = true;
                return null;
            }
            int n = count(u.unpackArrayHeader(), MAX_BLOCKS);
            ExtraKeys x = new ExtraKeys(n);
            for (int i = 0; i < n; i++) {
                if (u.tryUnpackNil()) {
                    continue;
                }
                ValueType t = u.getNextFormat().getValueType();
                if (t != ValueType.ARRAY) {
                    x.opaque[i] = digest(u.unpackValue().toJson());
                    continue;
                }
                int m = count(u.unpackArrayHeader(), 1024);
                List<String> strings = new ArrayList<>(m);
                @Nullable StringBuilder other = null;
                for (int k = 0; k < m; k++) {
                    if (u.getNextFormat().getValueType() == ValueType.STRING) {
                        strings.add(u.unpackString());
                    } else {
                        if (other == null) {
                            other = new StringBuilder();
                        }
                        other.append(u.unpackValue().toJson()).append('\u0000');
                    }
                }
                x.strings.set(i, strings);
                if (other != null) {
                    x.opaque[i] = digest(other.toString());
                }
            }
            return x;
        }
    }

    /** Extra keys as read, resolved against the adapter's name once the whole event is known. */
    private static final class ExtraKeys {
        /** Per block: the strings of its extra keys, null where the block had none. */
        final List<@Nullable List<String>> strings;

        final long[] opaque;

        ExtraKeys(int n) {
            strings = new ArrayList<>(java.util.Collections.nCopies(n, null));
            opaque = new long[n];
        }
    }

    /** A stable 64-bit digest of a text (never 0). */
    static long digest(String s) {
        long h = 0xCBF29CE484222325L;
        for (int i = 0; i < s.length(); i++) {
            h ^= s.charAt(i);
            h *= 0x100000001B3L;
        }
        return h == 0 ? 1 : h;
    }

    /** The number of positional fields a tag declares (0 for an unknown tag). */
    private static int knownFields(String tag) {
        return switch (tag) {
            case "BlockStored" -> STORED_FIELDS.length;
            case "BlockRemoved" -> REMOVED_FIELDS.length;
            case "AllBlocksCleared" -> 0;
            default -> 0;
        };
    }

    private static final String[] STORED_FIELDS = {
        "block_hashes",
        "parent_block_hash",
        "token_ids",
        "block_size",
        "lora_id",
        "medium",
        "lora_name",
        "extra_keys",
        "group_idx",
        "kv_cache_spec_kind",
        "kv_cache_spec_sliding_window"
    };
    private static final String[] REMOVED_FIELDS = {"block_hashes", "medium", "group_idx"};

    private static String fieldName(String tag, int i) {
        return tag.equals("BlockStored") ? STORED_FIELDS[i - 1] : REMOVED_FIELDS[i - 1];
    }

    /** The fields of one event as read, in either encoding. */
    private static final class Fields {
        long @Nullable [] hashes;
        boolean hasParent;
        long parent;
        int[] tokens = new int[0];
        long blockSize;
        long loraId = -1;

        @Nullable
        String medium;

        @Nullable
        String loraName;

        @Nullable
        ExtraKeys extra;

        @Nullable
        String kind;

        long window = -1;
        long group;

        /** Reads field {@code name}'s value; false (nothing consumed) for a name it does not know. */
        boolean read(Reader r, String name) throws IOException, MalformedBatchException {
            switch (name) {
                case "block_hashes" -> hashes = r.hashes();
                case "parent_block_hash" -> {
                    hasParent = !r.u.tryUnpackNil();
                    if (hasParent) {
                        parent = r.hash();
                    }
                }
                case "token_ids" -> tokens = r.tokens();
                case "block_size" -> blockSize = r.optionalInt(0);
                case "lora_id" -> loraId = r.optionalInt(-1);
                case "medium" -> medium = r.optionalString();
                case "lora_name" -> loraName = r.optionalString();
                case "extra_keys" -> extra = r.extraKeys();
                case "group_idx" -> group = r.optionalInt(0);
                case "kv_cache_spec_kind" -> kind = r.optionalString();
                case "kv_cache_spec_sliding_window" -> window = r.optionalInt(-1);
                default -> {
                    return false;
                }
            }
            return true;
        }

        /** Full attention unless the group says otherwise (a kind naming another, or a sliding window). */
        boolean fullAttention() {
            if (window >= 0) {
                return false;
            }
            if (kind == null) {
                return true;
            }
            String k = kind.toLowerCase(java.util.Locale.ROOT);
            return k.contains("full") || k.contains("mla");
        }

        @Nullable
        KvEvent build(Reader r, @Nullable String tag) {
            if (r.bad) {
                return null;
            }
            if (tag == null) {
                r.bad = true;
                return null;
            }
            switch (tag) {
                case "BlockStored" -> {
                    if (hashes == null || blockSize < 0 || blockSize > MAX_TOKENS) {
                        r.bad = true;
                        return null;
                    }
                    int bs = (int) blockSize;
                    if (bs == 0 && hashes.length > 0 && tokens.length % hashes.length == 0) {
                        bs = tokens.length / hashes.length;
                    }
                    if (tokens.length != 0 && (bs == 0 || tokens.length != (long) bs * hashes.length)) {
                        r.bad = true; // the token ids must cover the event's blocks exactly
                        return null;
                    }
                    @Nullable String lora = loraName != null ? loraName : loraId > 0 ? "lora-id:" + loraId : null;
                    @Nullable String salt = null;
                    long @Nullable [] opaque = null;
                    if (extra != null) {
                        if (extra.strings.size() != hashes.length) {
                            r.bad = true;
                            return null;
                        }
                        for (int i = 0; i < hashes.length; i++) {
                            long digest = extra.opaque[i];
                            List<String> s = extra.strings.get(i);
                            if (s != null) {
                                int from =
                                        !s.isEmpty() && lora != null && s.get(0).equals(lora) ? 1 : 0;
                                if (i == 0 && !hasParent && s.size() - from == 1) {
                                    salt = s.get(from);
                                } else if (s.size() > from) {
                                    digest ^= digest(String.join("\u0000", s.subList(from, s.size())));
                                    digest = digest == 0 ? 1 : digest;
                                }
                            }
                            if (digest != 0) {
                                if (opaque == null) {
                                    opaque = new long[hashes.length];
                                }
                                opaque[i] = digest;
                            }
                        }
                    }
                    return new KvEvent.Stored(
                            hashes,
                            hasParent,
                            parent,
                            tokens,
                            bs,
                            lora,
                            salt,
                            opaque,
                            KvEvent.tierOf(medium),
                            (int) Math.max(0, Math.min(group, 1 << 20)),
                            fullAttention());
                }
                case "BlockRemoved" -> {
                    if (hashes == null) {
                        r.bad = true;
                        return null;
                    }
                    return new KvEvent.Removed(
                            hashes, KvEvent.tierOf(medium), (int) Math.max(0, Math.min(group, 1 << 20)));
                }
                case "AllBlocksCleared" -> {
                    return KvEvent.Cleared.INSTANCE;
                }
                default -> {
                    r.tally.unknownTags++;
                    return null;
                }
            }
        }
    }
}
