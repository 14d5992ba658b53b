package dev.cart.ops;

import com.fasterxml.jackson.databind.JsonNode;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.Stroke;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;

/**
 * Draws the dashboard's main row (its first row's panels, where the dashboard puts them) from a Prometheus's
 * data with Java2D, as Grafana would show it roughly: a stat panel as its last value, a time series panel as
 * one line per series (dashed where the panel's overrides say so) with its legend. The data come from range
 * queries over the given window, the panels' queries expanded as the live check expands them. Headless; no
 * state.
 */
final class DashboardPicture {

    private static final int CELL_W = 60;
    private static final int CELL_H = 34;
    private static final int TOP = 44;
    private static final Color BACKGROUND = new Color(0x111217);
    private static final Color PANEL = new Color(0x181B1F);
    private static final Color BORDER = new Color(0x2C3235);
    private static final Color TEXT = new Color(0xCCCCDC);
    private static final Color DIM = new Color(0x8E8E9A);
    private static final Color[] PALETTE = {
        new Color(0x73BF69), new Color(0xF2CC0C), new Color(0x5794F2), new Color(0xFF9830),
        new Color(0xF2495C), new Color(0xB877D9), new Color(0x8AB8FF), new Color(0xFADE2A),
        new Color(0x96D98D), new Color(0xFFB357), new Color(0xCA95E5), new Color(0x37872D)
    };
    private static final Pattern LEGEND = Pattern.compile("\\{\\{\\s*(\\w+)\\s*}}");

    private DashboardPicture() {}

    /** One series of a panel: its legend, whether drawn dashed, and its points (seconds, value). */
    private record Series(String legend, boolean dashed, double[] t, double[] v) {}

    static void draw(LocalPrometheus prometheus, Map<String, String> variables, double from, double to, Path file)
            throws IOException, InterruptedException {
        Dashboard d = Dashboard.load();
        List<JsonNode> panels = mainRow(d);
        int rows = 0;
        int firstY = Integer.MAX_VALUE;
        for (JsonNode p : panels) {
            JsonNode g = p.path("gridPos");
            firstY = Math.min(firstY, g.path("y").asInt());
            rows = Math.max(rows, g.path("y").asInt() + g.path("h").asInt());
        }
        int width = 24 * CELL_W + 8;
        int height = TOP + (rows - firstY) * CELL_H + 8;
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(BACKGROUND);
            g.fillRect(0, 0, width, height);
            g.setColor(TEXT);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
            g.drawString(
                    d.root.path("title").asText() + " — "
                            + d.root.path("panels").get(0).path("title").asText(),
                    10,
                    20);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
            g.setColor(DIM);
            g.drawString(
                    "Drawn from a live check's Prometheus (two proxies, three simulated replicas, "
                            + String.format(Locale.ROOT, "%.0f s of replayed traffic", to - from)
                            + ") with the dashboard's own queries; not a Grafana screenshot.",
                    10,
                    36);
            double step = Math.max(1, Math.floor((to - from) / 300));
            for (JsonNode p : panels) {
                JsonNode gp = p.path("gridPos");
                int x = 4 + gp.path("x").asInt() * CELL_W;
                int y = TOP + (gp.path("y").asInt() - firstY) * CELL_H;
                int w = gp.path("w").asInt() * CELL_W - 4;
                int h = gp.path("h").asInt() * CELL_H - 4;
                List<Series> series = fetch(prometheus, p, variables, from, to, step);
                String unit =
                        p.path("fieldConfig").path("defaults").path("unit").asText("short");
                g.setColor(PANEL);
                g.fillRect(x, y, w, h);
                g.setColor(BORDER);
                g.drawRect(x, y, w, h);
                g.setColor(TEXT);
                g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 12));
                g.drawString(fit(g, p.path("title").asText(), w - 12), x + 6, y + 16);
                if (p.path("type").asText().equals("stat")) {
                    stat(g, series, unit, x, y, w, h);
                } else {
                    chart(g, p, series, unit, from, to, x, y, w, h);
                }
            }
        } finally {
            g.dispose();
        }
        Files.createDirectories(file.toAbsolutePath().getParent());
        ImageIO.write(img, "png", file.toFile());
    }

    /** The panels of the dashboard's first row. */
    private static List<JsonNode> mainRow(Dashboard d) {
        List<JsonNode> out = new ArrayList<>();
        boolean seenRow = false;
        for (JsonNode p : d.root.path("panels")) {
            if (p.path("type").asText().equals("row")) {
                if (seenRow) {
                    break;
                }
                seenRow = true;
            } else {
                out.add(p);
            }
        }
        return out;
    }

    private static List<Series> fetch(
            LocalPrometheus prometheus,
            JsonNode panel,
            Map<String, String> variables,
            double from,
            double to,
            double step)
            throws IOException, InterruptedException {
        List<Pattern> dashed = new ArrayList<>();
        for (JsonNode o : panel.path("fieldConfig").path("overrides")) {
            for (JsonNode prop : o.path("properties")) {
                if (prop.path("id").asText().equals("custom.lineStyle")
                        && !prop.path("value").path("fill").asText().equals("solid")) {
                    dashed.add(Pattern.compile(o.path("matcher").path("options").asText()));
                }
            }
        }
        List<Series> out = new ArrayList<>();
        for (JsonNode t : panel.path("targets")) {
            String expr = PromQl.expand(t.path("expr").asText(), variables);
            for (JsonNode s : prometheus.queryRange(expr, from, to, step)) {
                String legend = legend(t.path("legendFormat").asText(), s.path("metric"));
                JsonNode values = s.path("values");
                double[] ts = new double[values.size()];
                double[] vs = new double[values.size()];
                for (int i = 0; i < values.size(); i++) {
                    ts[i] = values.get(i).get(0).asDouble();
                    vs[i] = Double.parseDouble(values.get(i).get(1).asText());
                }
                boolean dash = dashed.stream().anyMatch(pt -> pt.matcher(legend).matches());
                out.add(new Series(legend, dash, ts, vs));
            }
        }
        return out;
    }

    private static String legend(String format, JsonNode labels) {
        Matcher m = LEGEND.matcher(format);
        StringBuilder b = new StringBuilder();
        while (m.find()) {
            m.appendReplacement(
                    b, Matcher.quoteReplacement(labels.path(m.group(1)).asText()));
        }
        m.appendTail(b);
        return b.toString().replace("http://", "");
    }

    private static void stat(Graphics2D g, List<Series> series, String unit, int x, int y, int w, int h) {
        double last = Double.NaN;
        for (Series s : series) {
            for (int i = s.v.length - 1; i >= 0; i--) {
                if (!Double.isNaN(s.v[i])) {
                    last = s.v[i];
                    break;
                }
            }
        }
        g.setColor(Double.isNaN(last) ? DIM : PALETTE[0]);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 30));
        String text = Double.isNaN(last) ? "No data" : format(last, unit);
        FontMetrics fm = g.getFontMetrics();
        g.drawString(text, x + (w - fm.stringWidth(text)) / 2, y + h / 2 + 22);
    }

    private static void chart(
            Graphics2D g,
            JsonNode panel,
            List<Series> series,
            String unit,
            double from,
            double to,
            int x,
            int y,
            int w,
            int h) {
        JsonNode defaults = panel.path("fieldConfig").path("defaults");
        double lo = defaults.has("min") ? defaults.path("min").asDouble() : Double.POSITIVE_INFINITY;
        double hi = defaults.has("max") ? defaults.path("max").asDouble() : Double.NEGATIVE_INFINITY;
        for (Series s : series) {
            for (double v : s.v) {
                if (!Double.isNaN(v) && !Double.isInfinite(v)) {
                    lo = defaults.has("min") ? lo : Math.min(lo, v);
                    hi = defaults.has("max") ? hi : Math.max(hi, v);
                }
            }
        }
        if (lo > 0 && !defaults.has("min")) {
            lo = 0;
        }
        if (!(hi > lo)) {
            hi = lo + 1;
        }
        // four grid steps of a round size (1, 2, 2.5 or 5 times a power of ten), the top on a step
        double step = niceStep((hi - lo) / 4);
        if (!defaults.has("max")) {
            hi = lo + step * Math.max(1, Math.ceil((hi - lo) / step - 1e-9));
        }
        int steps = (int) Math.round((hi - lo) / step);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
        FontMetrics fm = g.getFontMetrics();
        int legendLines = Math.min(4, (series.size() + 1) / 2);
        int left = x + 58;
        int right = x + w - 10;
        int top = y + 26;
        int bottom = y + h - 20 - legendLines * 13;
        for (int i = 0; i <= steps; i++) {
            double v = lo + step * i;
            int py = bottom - (int) Math.round((bottom - top) * (v - lo) / (hi - lo));
            g.setColor(BORDER);
            g.drawLine(left, py, right, py);
            g.setColor(DIM);
            String label = format(v, unit);
            g.drawString(label, left - 6 - fm.stringWidth(label), py + 4);
        }
        DateTimeFormatter clock = DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneOffset.UTC);
        for (int i = 0; i <= 3; i++) {
            double t = from + (to - from) * i / 3;
            int px = left + (int) Math.round((right - left) * (double) i / 3);
            String label = clock.format(Instant.ofEpochMilli((long) (t * 1000)));
            g.drawString(label, Math.min(px - fm.stringWidth(label) / 2, right - fm.stringWidth(label)), bottom + 13);
        }
        Stroke solid = new BasicStroke(1.6f);
        Stroke dashed = new BasicStroke(1.6f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1f, new float[] {6, 5}, 0);
        for (int k = 0; k < series.size(); k++) {
            Series s = series.get(k);
            g.setColor(PALETTE[k % PALETTE.length]);
            g.setStroke(s.dashed ? dashed : solid);
            Path2D.Double line = new Path2D.Double();
            boolean pen = false;
            for (int i = 0; i < s.t.length; i++) {
                if (Double.isNaN(s.v[i]) || Double.isInfinite(s.v[i])) {
                    pen = false;
                    continue;
                }
                double px = left + (right - left) * (s.t[i] - from) / (to - from);
                double py = bottom - (bottom - top) * (Math.min(hi, Math.max(lo, s.v[i])) - lo) / (hi - lo);
                if (pen) {
                    line.lineTo(px, py);
                } else {
                    line.moveTo(px, py);
                    pen = true;
                }
            }
            g.draw(line);
            if (k < legendLines * 2) {
                int lx = x + 8 + (k % 2) * (w / 2);
                int ly = bottom + 28 + (k / 2) * 13;
                g.drawLine(lx, ly - 4, lx + 14, ly - 4);
                g.setStroke(solid);
                g.setColor(TEXT);
                g.drawString(fit(g, s.legend, w / 2 - 26), lx + 18, ly);
            }
        }
        g.setStroke(solid);
        if (series.size() > legendLines * 2) {
            g.setColor(DIM);
            g.drawString("+" + (series.size() - legendLines * 2) + " more", right - 50, y + 16);
        }
    }

    private static double niceStep(double raw) {
        double power = Math.pow(10, Math.floor(Math.log10(raw)));
        for (double m : new double[] {1, 2, 2.5, 5}) {
            if (m * power >= raw) {
                return m * power;
            }
        }
        return 10 * power;
    }

    /** A value in the panel's unit, as Grafana would print it, briefly. */
    static String format(double v, String unit) {
        switch (unit) {
            case "percentunit":
                return String.format(Locale.ROOT, Math.abs(v) < 0.1 && v != 0 ? "%.1f%%" : "%.0f%%", v * 100);
            case "s":
                double a = Math.abs(v);
                if (a == 0) {
                    return "0 s";
                } else if (a < 1e-3) {
                    return String.format(Locale.ROOT, "%.0f µs", v * 1e6);
                } else if (a < 1) {
                    return String.format(Locale.ROOT, "%.0f ms", v * 1e3);
                }
                return String.format(Locale.ROOT, "%.1f s", v);
            case "reqps":
                return short1(v) + "/s";
            default:
                return short1(v);
        }
    }

    private static String short1(double v) {
        double a = Math.abs(v);
        if (a >= 1e6) {
            return String.format(Locale.ROOT, "%.1fM", v / 1e6);
        } else if (a >= 1e3) {
            return String.format(Locale.ROOT, "%.1fk", v / 1e3);
        } else if (a >= 10 || v == Math.rint(v)) {
            return String.format(Locale.ROOT, "%.0f", v);
        }
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static String fit(Graphics2D g, String s, int width) {
        FontMetrics fm = g.getFontMetrics();
        if (fm.stringWidth(s) <= width) {
            return s;
        }
        String t = s;
        while (!t.isEmpty() && fm.stringWidth(t + "…") > width) {
            t = t.substring(0, t.length() - 1);
        }
        return t + "…";
    }
}
