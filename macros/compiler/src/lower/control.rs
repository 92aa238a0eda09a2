//! Statements, blocks and branches: `let`, the statement dispatch (loops are in `loops`), a
//! block in its own scope, `if` and `match`, and the result register a branching expression
//! leaves its value in.
//!
//! What runs at most once is here; what repeats, with its jumps, is in `loops`.

use super::values::{LoopScope, Scope, Val};
use super::Lowerer;
use crate::ir::{BinOp, Block, Imm, Inst, Value};
use crate::tir::{self, Expr, LetPattern, Stmt};
use crate::types::{Scalar, Ty};

impl Lowerer<'_> {
    /// Lowers one statement.
    pub(super) fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let(pat, init) => self.let_stmt(pat, init),
            Stmt::LetElse(var, init, else_) => self.let_else(*var, init, else_),
            Stmt::Expr(e) => self.discarded(e),
            Stmt::For(label, var, iter, body) => self.for_loop(label, *var, iter, body),
            Stmt::WhileLet(label, var, scrutinee, body) => {
                self.while_let(label, *var, scrutinee, body)
            }
            Stmt::While(label, cond, body) => self.while_loop(label, cond, body),
            Stmt::Break(label, _, _) | Stmt::Continue(label, _) => self.jump(s, label),
        }
    }

    /// `let pattern = init;`: the value bound to a local, or a tuple's scalars to its locals.
    fn let_stmt(&mut self, pat: &LetPattern, init: &Expr) {
        let v = self.expr(init);
        match pat {
            LetPattern::Local(id) => self.bind(*id, v, init.span),
            LetPattern::Tuple(ids) => {
                for (id, x) in ids.iter().zip(v.scalars()) {
                    if let Some(id) = id {
                        self.bind(*id, Val::Scalar(x), init.span);
                    }
                }
            }
            // `let _ = value;` drops the value at once (an issued mma: its wait).
            LetPattern::Ignore => {
                if matches!(v, Val::PendingMma(_)) {
                    self.drop_value(&v, init.span);
                }
            }
            LetPattern::Pair(a, b) => match v {
                Val::SlicePair(first, second) => {
                    self.bind(*a, *first, init.span);
                    self.bind(*b, *second, init.span);
                }
                _ => self
                    .diags
                    .error(init.span, "channels are created in the kernel body only"),
            },
        }
    }

    /// Lowers a function body's statements and tail in the frame's outer scope. After a
    /// statement that never ends, the rest is dead (`dead` stays set for the scope's drops;
    /// the caller restores it).
    pub(super) fn block_body(&mut self, b: &tir::Block) -> Val {
        for s in &b.stmts {
            // Past the size limit the kernel is rejected: the rest is not lowered.
            if self.size_reported.is_some() {
                return Val::Unit;
            }
            self.stmt(s);
            if let Stmt::Expr(e) = s {
                self.dead |= e.ty == Ty::Never;
            }
        }
        match &b.tail {
            Some(t) => {
                let v = self.expr(t);
                self.dead |= t.ty == Ty::Never;
                v
            }
            None => Val::Unit,
        }
    }

    /// Lowers a nested block in its own scope.
    pub(super) fn scoped_block(&mut self, b: &tir::Block, lp: Option<LoopScope>) -> Val {
        self.frame().scopes.push(Scope {
            owned: Vec::new(),
            lp,
        });
        let dead = self.dead;
        let v = self.block_body(b);
        let last = self.frame().scopes.len() - 1;
        self.exit_scope_drops(last);
        self.frame().scopes.pop();
        self.dead = dead;
        v
    }

    /// `if cond { then } else { else_ }`, whose value (of type `ty`) goes to a result register.
    pub(super) fn if_expr(
        &mut self,
        cond: &Expr,
        then: &tir::Block,
        else_: Option<&Expr>,
        ty: &Ty,
    ) -> Val {
        let c = self.scalar(cond);
        let result = self.result_value(ty);
        self.cond_depth += 1;
        let then_block = self.sub_block(|l| {
            let v = l.scoped_block(then, None);
            l.copy_result(result, v);
        });
        let else_block = self.sub_block(|l| {
            if let Some(e) = else_ {
                let v = l.expr(e);
                l.copy_result(result, v);
            }
        });
        self.cond_depth -= 1;
        // A value chosen between two arms of plain arithmetic is computed without a branch:
        // both arms, then a select (a parallel body stays branch-free and keeps its vector loop).
        let pure = |b: &Block| {
            b.0.iter().all(|i| {
                matches!(
                    i,
                    Inst::Const { .. }
                        | Inst::Copy { .. }
                        | Inst::Unary { .. }
                        | Inst::Binary { .. }
                        | Inst::Fma { .. }
                        | Inst::Cast { .. }
                        | Inst::Bitcast { .. }
                        | Inst::Select { .. }
                )
            })
        };
        if let (Some(r), true) = (result, pure(&then_block) && pure(&else_block)) {
            let ty = self.values[r.0 as usize].ty;
            for inst in then_block.0 {
                self.emit(inst);
            }
            let from_then = self.new_value(ty, None);
            self.emit(Inst::Copy {
                dst: from_then,
                src: r,
            });
            for inst in else_block.0 {
                self.emit(inst);
            }
            self.emit(Inst::Select {
                dst: r,
                cond: c,
                if_true: from_then,
                if_false: r,
            });
            return Val::Scalar(r);
        }
        self.emit(Inst::If {
            cond: c,
            then: then_block,
            else_: else_block,
        });
        result.map_or(Val::Unit, Val::Scalar)
    }

    /// `match` over an integer: the arms are tried in order, without nesting, so that no arm's
    /// code is repeated and a long match stays one level deep. Arm `k` runs when its patterns
    /// match and no earlier arm ran: the patterns' test compares the scrutinee with constants,
    /// without side effects, so it is computed whether or not an earlier arm ran, and a flag
    /// `matched` (set by each arm that runs, when a later arm needs to know) masks it.
    pub(super) fn match_expr(&mut self, scrutinee: &Expr, arms: &[tir::MatchArm], ty: &Ty) -> Val {
        let x = self.scalar(scrutinee);
        let int = self.values[x.0 as usize].ty;
        let result = self.result_value(ty);
        // Absent until an arm before the current one could have run.
        let mut matched: Option<Value> = None;
        self.cond_depth += 1;
        for (k, arm) in arms.iter().enumerate() {
            if arm.patterns.is_empty() {
                continue;
            }
            let later = k + 1 < arms.len();
            // `None`: the patterns match every value (a wildcard among them).
            let mut cond: Option<Value> = None;
            let mut always = false;
            for p in &arm.patterns {
                let c = match *p {
                    tir::MatchPat::Wild => {
                        always = true;
                        continue;
                    }
                    tir::MatchPat::Value(v) => {
                        let k = self.konst(int, Imm::Int(v));
                        self.binary(BinOp::Eq, x, k)
                    }
                    tir::MatchPat::Range(lo, hi) => {
                        let (lo, hi) =
                            (self.konst(int, Imm::Int(lo)), self.konst(int, Imm::Int(hi)));
                        let a = self.binary(BinOp::Ge, x, lo);
                        let b = self.binary(BinOp::Le, x, hi);
                        self.binary(BinOp::And, a, b)
                    }
                };
                cond = Some(match cond {
                    None => c,
                    Some(prev) => self.binary(BinOp::Or, prev, c),
                });
            }
            let cond = if always { None } else { cond };
            let open = matched.map(|m| self.not(m));
            let take = match (cond, open) {
                (Some(c), Some(o)) => Some(self.binary(BinOp::And, c, o)),
                (c, o) => c.or(o),
            };
            // A later arm reads the flag: it starts false before the first arm that sets it.
            let flag = if later {
                Some(*matched.get_or_insert_with(|| self.konst(Scalar::Bool, Imm::Bool(false))))
            } else {
                None
            };
            let run = |l: &mut Self| {
                if let Some(b) = arm.binding {
                    l.frame().locals.insert(b, Val::Scalar(x));
                }
                let body = |l: &mut Self| {
                    if let Some(m) = flag {
                        l.emit(Inst::Const {
                            dst: m,
                            imm: Imm::Bool(true),
                        });
                    }
                    let v = l.expr(&arm.body);
                    l.copy_result(result, v);
                };
                match &arm.guard {
                    None => body(l),
                    Some(g) => {
                        let g = l.scalar(g);
                        let guarded = l.sub_block(body);
                        l.emit(Inst::If {
                            cond: g,
                            then: guarded,
                            else_: Block::default(),
                        });
                    }
                }
            };
            match take {
                Some(take) => {
                    let then = self.sub_block(run);
                    self.emit(Inst::If {
                        cond: take,
                        then,
                        else_: Block::default(),
                    });
                }
                // The first arm, matching every value: it always runs, and no later arm does.
                None => {
                    run(self);
                    if arm.guard.is_none() {
                        break;
                    }
                }
            }
        }
        self.cond_depth -= 1;
        result.map_or(Val::Unit, Val::Scalar)
    }

    /// The register a branching expression (`if`, `match`, `select!`) leaves its value in: one
    /// for a scalar or an enum (its `u32` discriminant), none for other types.
    pub(super) fn result_value(&mut self, ty: &Ty) -> Option<Value> {
        match ty {
            Ty::Scalar(sc) => Some(self.new_value(*sc, None)),
            Ty::Enum(..) => Some(self.new_value(Scalar::U32, None)),
            _ => None,
        }
    }

    /// An arm's value `v` into the expression's `result` register (when both are scalars).
    pub(super) fn copy_result(&mut self, result: Option<Value>, v: Val) {
        if let (Some(r), Val::Scalar(v)) = (result, v) {
            self.emit(Inst::Copy { dst: r, src: v });
        }
    }
}
