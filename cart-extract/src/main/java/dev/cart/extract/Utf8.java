package dev.cart.extract;

/**
 * Strict UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
 * Used only on the error path, to tell an encoding error from the syntax error Jackson reports for it.
 * Stateless and thread-safe.
 */
final class Utf8 {

    private Utf8() {
    }

    static boolean isValid(byte[] b) {
        int i = 0;
        int n = b.length;
        while (i < n) {
            int c = b[i] & 0xFF;
            if (c < 0x80) {
                i++;
                continue;
            }
            int len;
            int min;
            if (c >= 0xC2 && c <= 0xDF) {
                len = 2;
                min = 0x80;
            } else if (c >= 0xE0 && c <= 0xEF) {
                len = 3;
                min = 0x800;
            } else if (c >= 0xF0 && c <= 0xF4) {
                len = 4;
                min = 0x10000;
            } else {
                return false;
            }
            if (i + len > n) {
                return false;
            }
            int cp = c & (0xFF >> (len + 1));
            for (int k = 1; k < len; k++) {
                int d = b[i + k] & 0xFF;
                if ((d & 0xC0) != 0x80) {
                    return false;
                }
                cp = cp << 6 | d & 0x3F;
            }
            if (cp < min || cp > 0x10FFFF || cp >= 0xD800 && cp <= 0xDFFF) {
                return false;
            }
            i += len;
        }
        return true;
    }
}
