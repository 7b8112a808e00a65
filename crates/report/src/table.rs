//! Aligned columns, the shape of every table extdns prints.

/// Rows as columns three spaces apart, each as wide as its widest cell (counted in characters), the last
/// one unpadded; the tables of `extdns endpoints` and `extdns plan`.
pub fn aligned(rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in &rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                line.push_str(&" ".repeat(w - cell.chars().count() + 3));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
