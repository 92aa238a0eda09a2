//! A kernel's roles and channels drawn as an SVG picture, for its rustdoc page: self-contained
//! (no script, no font or stylesheet to fetch), so it shows the same offline as online.
//!
//! The layout is fixed and simple: the roles in `join!` order, left to right, one box each; a
//! channel is an arrow from its producer to each consumer, labelled with its ends' names and
//! its ring (`[f32; 1024] x 4`), drawn above the boxes when it runs forwards and below when it
//! runs backwards, one lane per arrow so that labels never overlap; a one-shot value is a dashed
//! arrow; a barrier between roles is a line under the boxes it joins.

use std::fmt::Write;

use super::{Kernel, RoleId};

/// Width and height of a role's box, and the gap between boxes.
const BOX_W: u32 = 190;
const BOX_H: u32 = 46;
const GAP: u32 = 70;
/// Height of one arrow's lane above or below the boxes.
const LANE: u32 = 30;
/// Approximate width of one character of the labels' 12 px sans-serif font, to size the picture.
const CHAR_W: u32 = 7;

/// One arrow: from, to, label, dashed.
struct Arrow {
    from: usize,
    to: usize,
    label: String,
    dashed: bool,
}

impl Kernel {
    /// The roles and channels as an SVG picture (see the module docs).
    pub fn role_graph_svg(&self) -> String {
        let mut arrows = Vec::new();
        for c in &self.channels {
            let Some(p) = c.producer else { continue };
            for q in &c.consumers {
                arrows.push(Arrow {
                    from: p.0 as usize,
                    to: q.0 as usize,
                    label: format!("{}: {} x {}", c.name, c.ty.payload(), c.ty.depth),
                    dashed: false,
                });
            }
        }
        let mut barriers = Vec::new();
        for b in &self.barriers {
            match b.receiver {
                Some(r) => {
                    for s in &b.roles {
                        arrows.push(Arrow {
                            from: s.0 as usize,
                            to: r.0 as usize,
                            label: format!("{}: one-shot", b.name),
                            dashed: true,
                        });
                    }
                }
                None => barriers.push((format!("barrier {}", b.name), &b.roles)),
            }
        }
        let forwards = arrows.iter().filter(|a| a.to > a.from).count() as u32;
        let backwards = arrows.len() as u32 - forwards;
        let top = 20 + LANE * forwards;
        let roles = self.roles.len().max(1) as u32;
        let label_width = arrows
            .iter()
            .map(|a| a.label.len() as u32 * CHAR_W)
            .chain(barriers.iter().map(|(l, _)| l.len() as u32 * CHAR_W))
            .max()
            .unwrap_or(0);
        let width = (roles * BOX_W + (roles - 1) * GAP + 20).max(label_width + 40);
        // A barrier's label goes under its line.
        let barrier_labels = if barriers.is_empty() { 0 } else { 16 };
        let bottom = top + BOX_H + 20 + LANE * (backwards + barriers.len() as u32) + barrier_labels;
        let mut svg = String::new();
        let _ = write!(
            svg,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{bottom}\" \
             viewBox=\"0 0 {width} {bottom}\" font-family=\"sans-serif\" font-size=\"12\">\
             <defs><marker id=\"gpu-async-arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" \
             markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">\
             <path d=\"M0,0 L10,5 L0,10 z\" fill=\"#444\"/></marker></defs>"
        );
        let center = |i: usize| 10 + i as u32 * (BOX_W + GAP) + BOX_W / 2;
        for (i, r) in self.roles.iter().enumerate() {
            let x = 10 + i as u32 * (BOX_W + GAP);
            let _ = write!(
                svg,
                "<rect x=\"{x}\" y=\"{top}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"6\" \
                 fill=\"#eef3fb\" stroke=\"#47a\"/>\
                 <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>\
                 <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">warps {}..{}</text>",
                x + BOX_W / 2,
                top + 19,
                escape(&r.name),
                x + BOX_W / 2,
                top + 36,
                r.first_warp,
                r.end_warp
            );
        }
        let (mut above, mut below) = (0u32, 0u32);
        for a in &arrows {
            // A role's channel to itself is a small loop under its box.
            // An arrow leaves a box right of its centre and enters one left of it, so that an
            // arrow in and an arrow out of the same box do not meet.
            let (x0, x1) = match center(a.from) {
                x if a.from == a.to => (x - 30, x + 30),
                x if a.to > a.from => (x + 30, center(a.to) - 30),
                x => (x - 30, center(a.to) + 30),
            };
            let dash = if a.dashed {
                " stroke-dasharray=\"5,4\""
            } else {
                ""
            };
            let (path, label_y) = if a.to > a.from {
                above += 1;
                let y = top - LANE * above + 8;
                (
                    format!("M{x0},{top} L{x0},{y} L{x1},{y} L{x1},{top}"),
                    y - 4,
                )
            } else {
                below += 1;
                let base = top + BOX_H;
                let y = base + LANE * below;
                (
                    format!("M{x0},{base} L{x0},{y} L{x1},{y} L{x1},{base}"),
                    y - 4,
                )
            };
            let _ = write!(
                svg,
                "<path d=\"{path}\" fill=\"none\" stroke=\"#444\"{dash} \
                 marker-end=\"url(#gpu-async-arrow)\"/>\
                 <text x=\"{}\" y=\"{label_y}\" text-anchor=\"middle\">{}</text>",
                (x0 + x1) / 2,
                escape(&a.label)
            );
        }
        for (k, (label, members)) in barriers.iter().enumerate() {
            let y = top + BOX_H + LANE * (below + k as u32 + 1);
            let xs: Vec<u32> = members
                .iter()
                .map(|&RoleId(r)| center(r as usize))
                .collect();
            let (lo, hi) = (
                xs.iter().copied().min().unwrap_or(0),
                xs.iter().copied().max().unwrap_or(0),
            );
            for x in &xs {
                let _ = write!(
                    svg,
                    "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{y}\" stroke=\"#a64\"/>",
                    top + BOX_H
                );
            }
            let _ = write!(
                svg,
                "<line x1=\"{lo}\" y1=\"{y}\" x2=\"{hi}\" y2=\"{y}\" stroke=\"#a64\" \
                 stroke-width=\"3\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" \
                 fill=\"#a64\">{}</text>",
                (lo + hi) / 2,
                y + 15,
                escape(label)
            );
        }
        svg.push_str("</svg>");
        svg
    }
}

/// `s` with the characters XML gives a meaning escaped.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;

    /// Checks that `svg` is well-formed XML as far as its tags go: every element closed in order,
    /// attribute values quoted, no stray `<` or `&` in text.
    pub(crate) fn assert_well_formed(svg: &str) {
        let mut open: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let text = &rest[..start];
            assert!(!text.contains('>'), "stray `>` in text {text:?}");
            for (i, _) in text.match_indices('&') {
                let entity = &text[i..];
                assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;"]
                        .iter()
                        .any(|e| entity.starts_with(e)),
                    "bare `&` in text {text:?}"
                );
            }
            let end = start + rest[start..].find('>').expect("an unclosed tag");
            let tag = &rest[start + 1..end];
            assert_eq!(
                tag.matches('"').count() % 2,
                0,
                "unbalanced quotes in <{tag}>"
            );
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(open.pop(), Some(name), "</{name}> closes another element");
            } else if !tag.ends_with('/') {
                open.push(tag.split_whitespace().next().expect("a tag name"));
            }
            rest = &rest[end + 1..];
        }
        assert!(open.is_empty(), "unclosed elements {open:?}");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
    }

    fn kernel(module: TokenStream) -> crate::ir::Kernel {
        let mut kernels = crate::compile(module).expect("compiles");
        kernels.remove(0).ir
    }

    #[test]
    fn a_pipeline_is_three_boxes_and_two_labelled_arrows() {
        let k = kernel(quote::quote! {
            mod m {
                use gpu_async::device::*;
                #[kernel(warps = 3)]
                pub async fn p(x: &[f32], y: &mut [f32]) {
                    let (a_tx, a_rx) = channel::<[f32; 256], 2>();
                    let (b_tx, b_rx) = channel::<[f32; 256], 2>();
                    join!(
                        on_warps(0..1, load(x, a_tx)),
                        on_warps(1..2, step(a_rx, b_tx)),
                        on_warps(2..3, store(b_rx, y)),
                    )
                    .await;
                }
                async fn load(x: &[f32], mut tx: Sender<[f32; 256], 2>) {
                    for t in block_tiles(x.len(), 256) {
                        let Some(mut s) = tx.reserve().await else {
                            return;
                        };
                        s.copy_from(&x[t]).await;
                        s.send();
                    }
                }
                async fn step(mut rx: Receiver<[f32; 256], 2>, mut tx: Sender<[f32; 256], 2>) {
                    while let Some(i) = rx.recv().await {
                        let Some(mut o) = tx.reserve().await else {
                            return;
                        };
                        o.par_iter_mut().zip(i.par_iter()).for_each(|(o, i)| *o = *i);
                        o.send();
                    }
                }
                async fn store(mut rx: Receiver<[f32; 256], 2>, y: &mut [f32]) {
                    let mut tiles = block_tiles(y.len(), 256);
                    while let Some(s) = rx.recv().await {
                        let t = tiles.next().unwrap();
                        y[t].par_iter_mut().zip(s.par_iter()).for_each(|(o, i)| *o = *i);
                    }
                }
            }
        });
        let svg = k.role_graph_svg();
        assert_well_formed(&svg);
        assert_eq!(svg.matches("<rect ").count(), 3);
        assert_eq!(svg.matches("marker-end=").count(), 2);
        for label in [
            "load",
            "step",
            "store",
            "warps 1..2",
            "a_tx/a_rx: [f32; 256] x 2",
        ] {
            assert!(svg.contains(label), "missing {label:?} in {svg}");
        }
        assert!(!svg.contains("script") && !svg.contains("http://cdn"));
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(
            super::escape("a<b & \"c\">"),
            "a&lt;b &amp; &quot;c&quot;&gt;"
        );
    }
}
