package dev.cart.sim;

/**
 * A Markdown table of the reports: a header row, its {@code |---|} separator, then rows of cells; a row
 * with fewer cells than the header is filled with empty ones.
 */
final class MarkdownTable {

    private final StringBuilder text = new StringBuilder();
    private final int columns;

    MarkdownTable(String... header) {
        columns = header.length;
        row((Object[]) header);
        text.append("|---".repeat(columns)).append("|\n");
    }

    /** Appends a row; each cell is written with {@link String#valueOf(Object)}. */
    MarkdownTable row(Object... cells) {
        if (cells.length > columns) {
            throw new IllegalArgumentException(cells.length + " cells in a table of " + columns + " columns");
        }
        text.append('|');
        for (int i = 0; i < columns; i++) {
            String cell = i < cells.length ? String.valueOf(cells[i]) : "";
            text.append(cell.isEmpty() ? " |" : " " + cell + " |");
        }
        text.append('\n');
        return this;
    }

    @Override
    public String toString() {
        return text.toString();
    }
}
