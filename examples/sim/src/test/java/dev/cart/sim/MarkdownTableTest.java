package dev.cart.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class MarkdownTableTest {

    @Test
    void writesTheHeaderItsSeparatorAndRowsFilledToTheWidth() {
        MarkdownTable t = new MarkdownTable("workload", "policy", "p99");
        t.row("rag", "cache_aware", 182).row("trace", "skipped: no file");
        assertEquals(
                "| workload | policy | p99 |\n|---|---|---|\n| rag | cache_aware | 182 |\n| trace | skipped: no file | |\n",
                t.toString());
        assertThrows(IllegalArgumentException.class, () -> t.row(1, 2, 3, 4));
    }
}
