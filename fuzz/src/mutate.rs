//! Mutations of a seed module, on its syntax tree and on its tokens.

use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use crate::rng::Rng;

/// The deepest nesting [`mutate`] writes. rustc's own parser stops at about 700 levels of nested
/// blocks (a plain fn of 1,000 nested `if`s overflows rustc's stack before any macro runs), and
/// syn's parser, which the attribute runs first, uses more stack per level in a debug build.
pub const MAX_NEST: usize = if cfg!(debug_assertions) { 200 } else { 600 };

/// Literals worth trying: the edges of the integer types, huge lengths, floats.
pub const LITERALS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "31",
    "32",
    "33",
    "64",
    "255",
    "256",
    "1024",
    "65535",
    "65536",
    "100000",
    "4294967295",
    "0xffffffff",
    "4294967296",
    "18446744073709551615",
    "99999999999999999999",
    "340282366920938463463374607431768211455",
    "(1 << 30)",
    "(1 << 31)",
    "(1 << 62)",
    "1.5",
    "0.0",
    "-0.0",
    "1e40",
    "1e-40",
    "2.5f64",
    "3u8",
    "300u8",
    "1usize",
    "7i64",
    "-3",
    "true",
    "false",
    "f32::NAN",
    "i32::MIN",
    "u64::MAX",
    "'c'",
    "\"s\"",
];

/// Types worth trying: scalars, arrays (huge ones too), slices of non-scalars, tuples, channel
/// ends.
pub const TYPES: &[&str] = &[
    "u32",
    "i32",
    "f32",
    "f64",
    "u8",
    "i8",
    "u16",
    "i64",
    "u64",
    "usize",
    "isize",
    "bool",
    "f16",
    "bf16",
    "[f32; 4]",
    "[u32; 0]",
    "[bool; 0]",
    "[f32; 100000]",
    "[f32; 1 << 31]",
    "[f32; 0xffffffff]",
    "[[f32; 2]; 2]",
    "[(u32, u32); 2]",
    "&[f32]",
    "&mut [f32]",
    "&mut [u32]",
    "&[[f32; 2]]",
    "&[&[f32]]",
    "&[(u32, u32)]",
    "&mut [(f32,)]",
    "(u32,)",
    "(f32, u32)",
    "((u32, u32), u32)",
    "()",
    "Sender<[f32; 4], 2>",
    "Receiver<[f32; 4], 2>",
    "Sender<[f32; 1000000], 32>",
    "Receiver<[u8; 4294967295], 1>",
    "&Barrier",
    "&Shared<u32>",
    "&[AtomicU32]",
    "&[AtomicF32]",
    "&SharedArray<f32, 64>",
    "&mut SharedArray<u32, 4294967295>",
    "&SharedArray2d<f32, 32, 33>",
    "&SharedArray<AtomicF32, 0>",
    "SharedArray<f32, 64>",
    "Option<u32>",
    "&f32",
    "[f32]",
    "Vec<f32>",
    "T",
];

/// Binary operators.
pub const BINOPS: &[&str] = &[
    "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", "<=", ">", ">=", "&&",
    "||", "+=", "-=", "*=", "<<=", ">>=", "%=", "=",
];

/// Snippets of expressions to splice in: constructs of the language and its edges.
pub const EXPRS: &[&str] = &[
    "x.len()",
    "block_tiles(x.len(), return)",
    "block_tiles(x.len(), 0)",
    "block_index()",
    "lane.id()",
    "{ }",
    "match 0u32 { }",
    "match 1u32 { _ => match 2u32 { } }",
    "loop { break; }",
    "loop { break 1; }",
    "(0u32,)",
    "[0.0f32; 100000]",
    "[0u8; 1 << 30]",
    "[1u32, 2, 3]",
    "x[0] as [f32; 2]",
    "x as &[(u32, u32)]",
    "1u32 << 1.5",
    "-1u32",
    "-(1usize)",
    "x[1..]",
    "y.par_iter_mut().for_each(|o| *o = 0.0)",
    "y.par_iter_mut().for_each(|o| { break; })",
    "y.par_iter_mut().for_each(|| 0)",
    "x.par_iter().map(|v| *v).sum::<f32>()",
    "async { 1 }.await",
    "join!(async { }, async { }).await",
    "u32::MAX.wrapping_add(1)",
    "1.0f32.sqrt()",
    "unsafe { *x.get_unchecked(0) }",
    "panic!(\"p\")",
    "assert!(true)",
    "channel::<[f32; 4], 2>()",
    "oneshot::<u32>()",
    "barrier()",
    "Shared::new(0u32)",
    "shared_array::<f32, 64>()",
    "shared_array::<u32, 4294967295>()",
    "shared_array_2d::<f64, 65536, 65536>()",
    "shared_array::<AtomicF32, 0>()",
    "shared_array::<[f32; 2], 4>()",
    "x.par_iter().exclusive_sum(y.par_iter_mut(), 0.0)",
    "x.par_iter().inclusive_scan(y.par_iter_mut(), 1.0, || 1.0, |a, b| a * b)",
    "x.par_iter().inclusive_sum(x.par_iter(), 0)",
    "y.par_iter().for_each(|v| { y[0] = *v; })",
];

/// The pieces mutations insert, parsed once.
pub struct Pieces {
    literals: Vec<syn::Expr>,
    types: Vec<syn::Type>,
    snippets: Vec<syn::Expr>,
    binops: Vec<syn::BinOp>,
    lens: Vec<syn::Expr>,
    wraps: Vec<syn::Expr>,
}

impl Pieces {
    /// Parses [`LITERALS`], [`TYPES`], [`EXPRS`], [`BINOPS`] and the shapes of wrapping.
    pub fn new() -> Self {
        Pieces {
            literals: LITERALS.iter().map(|t| parse_expr(t)).collect(),
            types: TYPES
                .iter()
                .filter_map(|t| syn::parse_str(t).ok())
                .collect(),
            snippets: EXPRS.iter().map(|t| parse_expr(t)).collect(),
            binops: BINOPS
                .iter()
                .filter_map(|t| syn::parse_str(t).ok())
                .collect(),
            lens: [
                "0",
                "1",
                "100000",
                "1 << 20",
                "1 << 30",
                "1 << 31",
                "0xffffffff",
                "4294967296",
                "2048 / 0",
                "u32::MAX",
            ]
            .iter()
            .map(|t| parse_expr(t))
            .collect(),
            wraps: WRAPS.iter().map(|t| parse_expr(t)).collect(),
        }
    }
}

impl Default for Pieces {
    fn default() -> Self {
        Self::new()
    }
}

/// One of the mutations, chosen at random, applied to a copy of `module`; `pool` gives other
/// seeds to splice from. The result is Rust text (it may not lex: then it is no input).
pub fn mutate(
    module: &syn::ItemMod,
    pool: &[syn::ItemMod],
    pieces: &Pieces,
    rng: &mut Rng,
) -> String {
    let mut m = module.clone();
    let rounds = if rng.one_in(3) { rng.range(2, 5) } else { 1 };
    let mut tokens: Option<TokenStream> = None;
    let mut grown = false;
    for _ in 0..rounds {
        if let Some(t) = tokens.take() {
            // A token mutation came first: go on at the token level.
            tokens = Some(mutate_tokens(t, rng));
            continue;
        }
        match rng.below(14) {
            0 => replace_expr(&mut m, pool, rng),
            1 => wrap_expr(&mut m, pieces, rng),
            // At most one mutation that grows the module a lot.
            2 if !grown => {
                grown = true;
                nest_expr(&mut m, pieces, rng)
            }
            3 => replace_lit(&mut m, pieces, rng),
            4 => swap_binop(&mut m, pieces, rng),
            5 => replace_type(&mut m, pieces, rng),
            6 if !grown => {
                grown = true;
                duplicate_stmt(&mut m, rng)
            }
            7 => delete_stmt(&mut m, rng),
            8 => splice_stmt(&mut m, pool, rng),
            9 => splice_item(&mut m, pool, rng),
            10 => delete_item(&mut m, rng),
            11 => snippet_expr(&mut m, pieces, rng),
            12 => replace_array_len(&mut m, pieces, rng),
            13 => tokens = Some(mutate_tokens(m.to_token_stream(), rng)),
            _ => delete_stmt(&mut m, rng),
        }
    }
    match tokens {
        Some(t) => t.to_string(),
        None => m.to_token_stream().to_string(),
    }
}

/// Calls `f` on the `n`-th expression (in visiting order); returns the number of expressions.
fn with_expr(m: &mut syn::ItemMod, n: Option<usize>, f: &mut dyn FnMut(&mut syn::Expr)) -> usize {
    struct V<'a> {
        n: Option<usize>,
        seen: usize,
        f: &'a mut dyn FnMut(&mut syn::Expr),
    }
    impl VisitMut for V<'_> {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            let here = self.seen;
            self.seen += 1;
            if Some(here) == self.n {
                (self.f)(e);
                return;
            }
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
    let mut v = V { n, seen: 0, f };
    v.visit_item_mod_mut(m);
    v.seen
}

/// Applies `f` to a random expression of `m`.
fn on_random_expr(m: &mut syn::ItemMod, rng: &mut Rng, f: &mut dyn FnMut(&mut syn::Expr)) {
    let count = with_expr(m, None, &mut |_| {});
    if count > 0 {
        let n = rng.below(count);
        with_expr(m, Some(n), f);
    }
}

/// A random expression of a random module of the pool, for splicing.
fn pool_exprs(pool: &[syn::ItemMod], rng: &mut Rng) -> Option<syn::Expr> {
    let donor = rng.pick(pool);
    struct Nth {
        n: Option<usize>,
        seen: usize,
        found: Option<syn::Expr>,
    }
    impl<'a> Visit<'a> for Nth {
        fn visit_expr(&mut self, e: &'a syn::Expr) {
            if Some(self.seen) == self.n {
                self.found = Some(e.clone());
            }
            self.seen += 1;
            if self.found.is_none() {
                syn::visit::visit_expr(self, e);
            }
        }
    }
    let mut count = Nth {
        n: None,
        seen: 0,
        found: None,
    };
    count.visit_item_mod(donor);
    if count.seen == 0 {
        return None;
    }
    let mut pick = Nth {
        n: Some(rng.below(count.seen)),
        seen: 0,
        found: None,
    };
    pick.visit_item_mod(donor);
    pick.found
}

fn parse_expr(text: &str) -> syn::Expr {
    syn::parse_str(text).unwrap_or_else(|_| syn::parse_quote!(0))
}

fn replace_expr(m: &mut syn::ItemMod, pool: &[syn::ItemMod], rng: &mut Rng) {
    if pool.is_empty() {
        return;
    }
    if let Some(donor) = pool_exprs(pool, rng) {
        on_random_expr(m, rng, &mut |e| *e = donor.clone());
    }
}

fn snippet_expr(m: &mut syn::ItemMod, pieces: &Pieces, rng: &mut Rng) {
    let donor = rng.pick(&pieces.snippets).clone();
    on_random_expr(m, rng, &mut |e| *e = donor.clone());
}

/// The shapes of one level of wrapping: `E` is the expression wrapped, `L` a literal, `T` a type.
const WRAPS: &[&str] = &[
    "-E",
    "!E",
    "(E) as T",
    "E + L",
    "E << L",
    "if L { E } else { 0 }",
    "{ E }",
    "match L { _ => E }",
    "(E)",
    "E.min(L)",
    "&E",
    "*E",
    "loop { break E; }",
    "E.0",
    "E[L]",
    "unsafe { E }",
    "async { E }.await",
    "(E, L)",
];

/// One level of wrapping of kind `kind` (a [`WRAPS`] shape) around `e`, built on the syntax tree
/// (so that nesting many levels stays linear).
fn wrap_once(e: syn::Expr, kind: usize, pieces: &Pieces, rng: &mut Rng) -> syn::Expr {
    struct Fill {
        e: Option<syn::Expr>,
        lit: syn::Expr,
        ty: syn::Type,
    }
    impl VisitMut for Fill {
        fn visit_expr_mut(&mut self, x: &mut syn::Expr) {
            if let syn::Expr::Path(p) = x {
                if p.path.is_ident("E") {
                    if let Some(e) = self.e.take() {
                        *x = e;
                    }
                    return;
                }
                if p.path.is_ident("L") {
                    *x = self.lit.clone();
                    return;
                }
            }
            syn::visit_mut::visit_expr_mut(self, x);
        }
        fn visit_type_mut(&mut self, t: &mut syn::Type) {
            if matches!(t, syn::Type::Path(p) if p.path.is_ident("T")) {
                *t = self.ty.clone();
                return;
            }
            syn::visit_mut::visit_type_mut(self, t);
        }
    }
    let mut shape = pieces.wraps[kind % pieces.wraps.len()].clone();
    let mut fill = Fill {
        e: Some(e),
        lit: rng.pick(&pieces.literals).clone(),
        ty: rng.pick(&pieces.types).clone(),
    };
    fill.visit_expr_mut(&mut shape);
    shape
}

fn wrap_expr(m: &mut syn::ItemMod, pieces: &Pieces, rng: &mut Rng) {
    let kind = rng.below(WRAPS.len());
    let mut r = rng.clone();
    on_random_expr(m, rng, &mut |e| {
        let inner = std::mem::replace(e, syn::parse_quote!(0));
        *e = wrap_once(inner, kind, pieces, &mut r);
    });
}

/// Wraps an expression many times in one kind of nesting (blocks, `if`, `match`, `+`, unary
/// `-`, parentheses), up to [`MAX_NEST`] levels.
fn nest_expr(m: &mut syn::ItemMod, pieces: &Pieces, rng: &mut Rng) {
    let kind = rng.below(WRAPS.len());
    let depth = match rng.below(4) {
        0 => rng.range(2, 20),
        1 => rng.range(20, 100),
        2 => rng.range(60, 200),
        _ => rng.range(200, MAX_NEST),
    };
    let mut r = rng.clone();
    on_random_expr(m, rng, &mut |e| {
        let mut inner = std::mem::replace(e, syn::parse_quote!(0));
        for _ in 0..depth {
            inner = wrap_once(inner, kind, pieces, &mut r);
        }
        *e = inner;
    });
}

fn replace_lit(m: &mut syn::ItemMod, pieces: &Pieces, rng: &mut Rng) {
    let mut lits = 0usize;
    on_lits(m, None, &mut lits, &mut |_| {});
    if lits == 0 {
        return;
    }
    let n = rng.below(lits);
    let lit = rng.pick(&pieces.literals);
    let mut seen = 0;
    on_lits(m, Some(n), &mut seen, &mut |e| *e = lit.clone());
}

/// Calls `f` on the `n`-th literal expression; counts them in `seen`.
fn on_lits(
    m: &mut syn::ItemMod,
    n: Option<usize>,
    seen: &mut usize,
    f: &mut dyn FnMut(&mut syn::Expr),
) {
    struct V<'a> {
        n: Option<usize>,
        seen: &'a mut usize,
        f: &'a mut dyn FnMut(&mut syn::Expr),
    }
    impl VisitMut for V<'_> {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            if let syn::Expr::Lit(_) = e {
                if Some(*self.seen) == self.n {
                    (self.f)(e);
                }
                *self.seen += 1;
                return;
            }
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
    V { n, seen, f }.visit_item_mod_mut(m);
}

fn swap_binop(m: &mut syn::ItemMod, pieces: &Pieces, rng: &mut Rng) {
    struct V {
        n: Option<usize>,
        seen: usize,
        op: Option<syn::BinOp>,
    }
    impl VisitMut for V {
        fn visit_expr_binary_mut(&mut self, b: &mut syn::ExprBinary) {
            if Some(self.seen) == self.n {
                if let Some(op) = self.op {
                    b.op = op;
                }
            }
            self.seen += 1;
            syn::visit_mut::visit_expr_binary_mut(self, b);
        }
    }
    let mut count = V {
        n: None,
        seen: 0,
        op: None,
    };
    count.visit_item_mod_mut(m);
    if count.seen == 0 {
        return;
    }
    let n = rng.below(count.seen);
    V {
        n: Some(n),
        seen: 0,
        op: Some(*rng.pick(&pieces.binops)),
    }
    .visit_item_mod_mut(m);
}

fn replace_type(m: &mut syn::ItemMod, pieces: &Pieces, rng: &mut Rng) {
    struct V<'a> {
        n: Option<usize>,
        seen: usize,
        ty: &'a syn::Type,
    }
    impl VisitMut for V<'_> {
        fn visit_type_mut(&mut self, t: &mut syn::Type) {
            let here = self.seen;
            self.seen += 1;
            if Some(here) == self.n {
                *t = self.ty.clone();
                return;
            }
            syn::visit_mut::visit_type_mut(self, t);
        }
    }
    let ty = rng.pick(&pieces.types).clone();
    let mut count = V {
        n: None,
        seen: 0,
        ty: &ty,
    };
    count.visit_item_mod_mut(m);
    if count.seen == 0 {
        return;
    }
    let n = rng.below(count.seen);
    V {
        n: Some(n),
        seen: 0,
        ty: &ty,
    }
    .visit_item_mod_mut(m);
}

fn replace_array_len(m: &mut syn::ItemMod, pieces: &Pieces, rng: &mut Rng) {
    struct V {
        n: Option<usize>,
        seen: usize,
        len: syn::Expr,
    }
    impl VisitMut for V {
        fn visit_type_array_mut(&mut self, a: &mut syn::TypeArray) {
            if Some(self.seen) == self.n {
                a.len = self.len.clone();
            }
            self.seen += 1;
            syn::visit_mut::visit_type_array_mut(self, a);
        }
        fn visit_expr_repeat_mut(&mut self, r: &mut syn::ExprRepeat) {
            if Some(self.seen) == self.n {
                *r.len = self.len.clone();
            }
            self.seen += 1;
            syn::visit_mut::visit_expr_repeat_mut(self, r);
        }
    }
    let len = rng.pick(&pieces.lens).clone();
    let mut count = V {
        n: None,
        seen: 0,
        len: len.clone(),
    };
    count.visit_item_mod_mut(m);
    if count.seen == 0 {
        return;
    }
    let n = rng.below(count.seen);
    V {
        n: Some(n),
        seen: 0,
        len,
    }
    .visit_item_mod_mut(m);
}

/// Calls `f` on the `n`-th block; returns the number of blocks.
fn with_block(m: &mut syn::ItemMod, n: Option<usize>, f: &mut dyn FnMut(&mut syn::Block)) -> usize {
    struct V<'a> {
        n: Option<usize>,
        seen: usize,
        f: &'a mut dyn FnMut(&mut syn::Block),
    }
    impl VisitMut for V<'_> {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            if Some(self.seen) == self.n {
                (self.f)(b);
            }
            self.seen += 1;
            syn::visit_mut::visit_block_mut(self, b);
        }
    }
    let mut v = V { n, seen: 0, f };
    v.visit_item_mod_mut(m);
    v.seen
}

fn on_random_block(m: &mut syn::ItemMod, rng: &mut Rng, f: &mut dyn FnMut(&mut syn::Block)) {
    let count = with_block(m, None, &mut |_| {});
    if count > 0 {
        let n = rng.below(count);
        with_block(m, Some(n), f);
    }
}

fn duplicate_stmt(m: &mut syn::ItemMod, rng: &mut Rng) {
    let times = match rng.below(3) {
        0 => 1,
        1 => rng.range(2, 50),
        _ => rng.range(200, 2000),
    };
    let mut r = rng.clone();
    on_random_block(m, rng, &mut |b| {
        if b.stmts.is_empty() {
            return;
        }
        let i = r.below(b.stmts.len());
        let s = b.stmts[i].clone();
        // At most about 400 KB of copies.
        let size = s.to_token_stream().to_string().len().max(1);
        for _ in 0..times.min(400_000 / size) {
            b.stmts.insert(i, s.clone());
        }
    });
}

fn delete_stmt(m: &mut syn::ItemMod, rng: &mut Rng) {
    let mut r = rng.clone();
    on_random_block(m, rng, &mut |b| {
        if !b.stmts.is_empty() {
            let i = r.below(b.stmts.len());
            b.stmts.remove(i);
        }
    });
}

fn splice_stmt(m: &mut syn::ItemMod, pool: &[syn::ItemMod], rng: &mut Rng) {
    if pool.is_empty() {
        return;
    }
    let donor = rng.pick(pool).clone();
    let mut stmts = Vec::new();
    struct Collect<'a>(&'a mut Vec<syn::Stmt>);
    impl<'a> Visit<'a> for Collect<'_> {
        fn visit_stmt(&mut self, s: &'a syn::Stmt) {
            self.0.push(s.clone());
            syn::visit::visit_stmt(self, s);
        }
    }
    Collect(&mut stmts).visit_item_mod(&donor);
    if stmts.is_empty() {
        return;
    }
    let s = stmts.swap_remove(rng.below(stmts.len()));
    let mut r = rng.clone();
    on_random_block(m, rng, &mut |b| {
        let i = r.below(b.stmts.len() + 1);
        b.stmts.insert(i, s.clone());
    });
}

fn splice_item(m: &mut syn::ItemMod, pool: &[syn::ItemMod], rng: &mut Rng) {
    if pool.is_empty() {
        return;
    }
    let donor = rng.pick(pool);
    let (Some((_, theirs)), Some((_, ours))) = (&donor.content, &mut m.content) else {
        return;
    };
    if theirs.is_empty() {
        return;
    }
    let item = rng.pick(theirs).clone();
    let at = rng.below(ours.len() + 1);
    ours.insert(at, item);
}

fn delete_item(m: &mut syn::ItemMod, rng: &mut Rng) {
    if let Some((_, items)) = &mut m.content {
        if !items.is_empty() {
            let i = rng.below(items.len());
            items.remove(i);
        }
    }
}

/// The tokens of `t`, flattened (groups are kept as one token each, their insides mutated on
/// their own).
fn mutate_tokens(t: TokenStream, rng: &mut Rng) -> TokenStream {
    // Pick a group at random (the whole stream or one nested in it), then edit its tokens.
    let mut groups = 0usize;
    count_groups(&t, &mut groups);
    let target = rng.below(groups + 1);
    let mut seen = 0usize;
    edit_stream(t, target, &mut seen, rng)
}

fn count_groups(t: &TokenStream, n: &mut usize) {
    for tt in t.clone() {
        if let TokenTree::Group(g) = tt {
            *n += 1;
            count_groups(&g.stream(), n);
        }
    }
}

fn edit_stream(t: TokenStream, target: usize, seen: &mut usize, rng: &mut Rng) -> TokenStream {
    let here = *seen;
    *seen += 1;
    let mut tokens: Vec<TokenTree> = t
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => {
                let inner = edit_stream(g.stream(), target, seen, rng);
                let mut ng = Group::new(g.delimiter(), inner);
                ng.set_span(g.span());
                TokenTree::Group(ng)
            }
            other => other,
        })
        .collect();
    if here == target {
        edit_tokens(&mut tokens, rng);
    }
    tokens.into_iter().collect()
}

fn edit_tokens(tokens: &mut Vec<TokenTree>, rng: &mut Rng) {
    let at = rng.below(tokens.len() + 1);
    let idents = [
        "u32", "f32", "usize", "i8", "bool", "f16", "x", "y", "tx", "rx", "lane", "slot", "break",
        "return", "continue", "loop", "async", "await", "mut", "let", "match", "if", "else", "_",
        "Some", "None", "as", "fn", "pub", "self", "static", "const", "unsafe",
    ];
    let puncts = [
        ";", ",", ".", ":", "=", "+", "-", "*", "/", "%", "!", "&", "|", "^", "<", ">", "?", "#",
        "@", "'",
    ];
    match rng.below(7) {
        0 if at < tokens.len() => {
            tokens.remove(at);
        }
        1 if at < tokens.len() => {
            let t = tokens[at].clone();
            tokens.insert(at, t);
        }
        2 => {
            let p = rng.pick(&puncts).chars().next().unwrap_or(';');
            let spacing = if rng.one_in(2) {
                Spacing::Alone
            } else {
                Spacing::Joint
            };
            tokens.insert(at, TokenTree::Punct(Punct::new(p, spacing)));
        }
        3 => {
            let name = idents[rng.below(idents.len())];
            tokens.insert(at, TokenTree::Ident(Ident::new(name, Span::call_site())));
        }
        4 => {
            let text = rng.pick(LITERALS);
            if let Ok(ts) = text.parse::<TokenStream>() {
                for (k, tt) in ts.into_iter().enumerate() {
                    tokens.insert(at + k, tt);
                }
            }
        }
        5 if at < tokens.len() => {
            // Replace a literal or a punctuation mark by another of its kind.
            let t = match &tokens[at] {
                TokenTree::Literal(_) => rng.pick(LITERALS).parse::<TokenStream>().ok(),
                TokenTree::Punct(_) => rng.pick(&puncts).parse::<TokenStream>().ok(),
                TokenTree::Ident(_) => rng.pick(&idents).parse::<TokenStream>().ok(),
                TokenTree::Group(g) => {
                    let delim =
                        *rng.pick(&[Delimiter::Brace, Delimiter::Bracket, Delimiter::Parenthesis]);
                    Some(TokenTree::Group(Group::new(delim, g.stream())).into())
                }
            };
            if let Some(t) = t {
                tokens.splice(at..=at, t);
            }
        }
        _ => {
            tokens.insert(at, TokenTree::Literal(Literal::u32_unsuffixed(0)));
        }
    }
}
