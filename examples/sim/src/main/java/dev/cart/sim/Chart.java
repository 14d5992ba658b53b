package dev.cart.sim;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.AffineTransform;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;

/**
 * Draws the report's chart with Java2D: for each workload a group of bars, one per policy, in two panels
 * (replica-measured hit ratio with the workload's ideal as a dashed line; P99 time to first token on a
 * log scale). Headless; no state.
 */
final class Chart {

    private static final Color[] PALETTE = {
        new Color(0x4E79A7), new Color(0xF28E2B), new Color(0x59A14F), new Color(0xE15759),
        new Color(0x76B7B2), new Color(0xEDC948), new Color(0xB07AA1), new Color(0xFF9DA7),
        new Color(0x9C755F), new Color(0xBAB0AC), new Color(0x1B3A5C), new Color(0x8CD17D),
        new Color(0x6B3E00), new Color(0x7F3C8D),
    };

    private Chart() {}

    /** One workload's bars: a label, the ideal hit ratio, and per policy (in legend order) hit and P99. */
    record Group(String label, double ideal, double[] hit, double[] p99Millis) {}

    /** The chart of a report's main tables: each workload's median hit ratio and median P99 over the seeds. */
    static void write(Path file, Report.Settings s, RunMatrix.Matrix m) throws IOException {
        List<String> labels = new java.util.ArrayList<>();
        for (Variant v : m.variants()) {
            labels.add(v.label());
        }
        List<Group> groups = new java.util.ArrayList<>();
        for (RunMatrix.WorkloadRuns w : m.workloads()) {
            if (w.isSkipped()) {
                continue;
            }
            double[] hit = new double[labels.size()];
            double[] p99 = new double[labels.size()];
            for (int i = 0; i < labels.size(); i++) {
                hit[i] = w.spread(labels.get(i), RunResult::hitRatio).median();
                p99[i] = w.spread(labels.get(i), RunResult::ttftP99Millis).median();
            }
            groups.add(new Group(
                    w.name(), w.prepared(PreparedWorkload::idealHitRatio).median(), hit, p99));
        }
        write(
                file,
                String.format(
                        java.util.Locale.ROOT,
                        "CART routing quality: %d simulated replicas (%s), " + "median over seeds %s",
                        s.replicas,
                        m.model().title,
                        s.seedsText()),
                labels,
                groups);
    }

    static void write(Path file, String title, List<String> policies, List<Group> groups) throws IOException {
        int width = Math.max(1400, 140 + groups.size() * (policies.size() * 18 + 40));
        int panel = 360;
        int top = 70;
        int left = 80;
        int legendH = 30 + 22 * ((policies.size() + 3) / 4);
        int height = top + 2 * panel + 140 + legendH;
        BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            g.setColor(Color.BLACK);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 18));
            g.drawString(title, left, 32);

            int plotW = width - left - 30;
            int y1 = top;
            int y2 = top + panel + 70;
            drawHitPanel(g, left, y1, plotW, panel, policies, groups);
            drawTtftPanel(g, left, y2, plotW, panel, policies, groups);
            drawLegend(g, left, y2 + panel + 60, policies);
        } finally {
            g.dispose();
        }
        ImageIO.write(img, "png", file.toFile());
    }

    private static int groupWidth(int plotW, int groups) {
        return plotW / Math.max(1, groups);
    }

    private static void drawHitPanel(
            Graphics2D g, int x, int y, int w, int h, List<String> policies, List<Group> groups) {
        axisTitle(g, x, y, "Hit ratio (cached prompt tokens / prompt tokens); dashed: ideal");
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        for (int i = 0; i <= 5; i++) {
            double v = i / 5.0;
            int yy = y + h - (int) (v * h);
            gridLine(g, x, yy, w, String.format("%.1f", v));
        }
        int gw = groupWidth(w, groups.size());
        int bw = Math.max(4, (gw - 30) / policies.size());
        for (int k = 0; k < groups.size(); k++) {
            Group gr = groups.get(k);
            int gx = x + k * gw + 15;
            for (int p = 0; p < policies.size(); p++) {
                double v = gr.hit()[p];
                if (Double.isNaN(v)) {
                    continue;
                }
                int bh = (int) Math.round(Math.max(0, Math.min(1, v)) * h);
                g.setColor(PALETTE[p % PALETTE.length]);
                g.fillRect(gx + p * bw, y + h - bh, bw - 2, bh);
            }
            int iy = y + h - (int) Math.round(gr.ideal() * h);
            g.setColor(Color.BLACK);
            g.setStroke(
                    new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
            g.drawLine(gx - 4, iy, gx + policies.size() * bw + 2, iy);
            g.setStroke(new BasicStroke(1f));
            groupLabel(g, gx, y + h, policies.size() * bw, gr.label());
        }
    }

    private static void drawTtftPanel(
            Graphics2D g, int x, int y, int w, int h, List<String> policies, List<Group> groups) {
        axisTitle(g, x, y, "P99 time to first token (ms, log scale)");
        double max = 1;
        double min = Double.MAX_VALUE;
        for (Group gr : groups) {
            for (double v : gr.p99Millis()) {
                if (!Double.isNaN(v) && v > 0) {
                    max = Math.max(max, v);
                    min = Math.min(min, v);
                }
            }
        }
        double lo = Math.pow(10, Math.floor(Math.log10(Math.min(min, max))));
        double hi = Math.pow(10, Math.ceil(Math.log10(max)));
        if (hi <= lo) {
            hi = lo * 10;
        }
        double logLo = Math.log10(lo);
        double span = Math.log10(hi) - logLo;
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        for (double v = lo; v <= hi * 1.0001; v *= 10) {
            int yy = y + h - (int) Math.round((Math.log10(v) - logLo) / span * h);
            gridLine(g, x, yy, w, v >= 1000 ? String.format("%.0fs", v / 1000) : String.format("%.0f", v));
        }
        int gw = groupWidth(w, groups.size());
        int bw = Math.max(4, (gw - 30) / policies.size());
        for (int k = 0; k < groups.size(); k++) {
            Group gr = groups.get(k);
            int gx = x + k * gw + 15;
            for (int p = 0; p < policies.size(); p++) {
                double v = gr.p99Millis()[p];
                if (Double.isNaN(v) || v <= 0) {
                    continue;
                }
                int bh = (int) Math.round((Math.log10(Math.max(v, lo)) - logLo) / span * h);
                g.setColor(PALETTE[p % PALETTE.length]);
                g.fillRect(gx + p * bw, y + h - bh, bw - 2, Math.max(1, bh));
            }
            groupLabel(g, gx, y + h, policies.size() * bw, gr.label());
        }
    }

    private static void axisTitle(Graphics2D g, int x, int y, String text) {
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 14));
        g.drawString(text, x, y - 10);
    }

    private static void gridLine(Graphics2D g, int x, int y, int w, String label) {
        g.setColor(new Color(0xDDDDDD));
        g.drawLine(x, y, x + w, y);
        g.setColor(Color.DARK_GRAY);
        FontMetrics fm = g.getFontMetrics();
        g.drawString(label, x - 8 - fm.stringWidth(label), y + 4);
    }

    private static void groupLabel(Graphics2D g, int x, int baseline, int w, String label) {
        g.setColor(Color.BLACK);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        FontMetrics fm = g.getFontMetrics();
        AffineTransform saved = g.getTransform();
        g.drawString(label, x + Math.max(0, (w - fm.stringWidth(label)) / 2), baseline + 18);
        g.setTransform(saved);
    }

    private static void drawLegend(Graphics2D g, int x, int y, List<String> policies) {
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        int col = 0;
        int row = 0;
        for (int p = 0; p < policies.size(); p++) {
            int lx = x + col * 330;
            int ly = y + row * 22;
            g.setColor(PALETTE[p % PALETTE.length]);
            g.fillRect(lx, ly - 11, 14, 14);
            g.setColor(Color.BLACK);
            g.drawString(policies.get(p), lx + 20, ly + 1);
            if (++col == 4) {
                col = 0;
                row++;
            }
        }
    }
}
