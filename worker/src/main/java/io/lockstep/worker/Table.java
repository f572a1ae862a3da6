package io.lockstep.worker;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** A compact text table: columns as wide as their widest cell, two spaces apart. */
final class Table {

    private final List<String[]> rows = new ArrayList<>();

    Table(String... header) {
        rows.add(header);
    }

    void row(String... cells) {
        rows.add(cells);
    }

    void print(PrintWriter out) {
        int[] width = new int[rows.get(0).length];
        for (String[] r : rows) {
            for (int i = 0; i < r.length; i++) {
                width[i] = Math.max(width[i], r[i].length());
            }
        }
        for (String[] r : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < r.length; i++) {
                line.append(i == r.length - 1 ? r[i] : String.format("%-" + (width[i] + 2) + "s", r[i]));
            }
            out.println(line.toString().stripTrailing());
        }
    }
}
