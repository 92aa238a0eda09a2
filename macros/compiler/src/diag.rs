//! Diagnostics: every phase collects all its errors, each on the narrowest span of the user's
//! code, instead of stopping at the first.

use proc_macro2::{Span, TokenStream};

/// A list of compile errors, in the order they were found.
#[derive(Debug, Default)]
pub struct Diagnostics {
    errors: Vec<syn::Error>,
}

impl Diagnostics {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an error at `span`.
    pub fn error(&mut self, span: Span, message: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// Records an error spanning the tokens of `node`.
    pub fn error_at<T: quote::ToTokens + ?Sized>(
        &mut self,
        node: &T,
        message: impl std::fmt::Display,
    ) {
        self.errors.push(syn::Error::new_spanned(node, message));
    }

    /// Records an already built error.
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// Takes every error of `other`.
    pub fn extend(&mut self, other: Diagnostics) {
        self.errors.extend(other.errors);
    }

    /// Whether no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// How many errors were recorded.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// Forgets the errors recorded after the first `len`.
    pub fn truncate(&mut self, len: usize) {
        self.errors.truncate(len);
    }

    /// The messages, for tests and the inspect tool.
    pub fn messages(&self) -> Vec<String> {
        self.errors.iter().map(|e| e.to_string()).collect()
    }

    /// Each error's message with the span it starts at, for tools that print locations.
    pub fn located(&self) -> Vec<(Span, String)> {
        self.errors
            .iter()
            .flat_map(|e| e.clone().into_iter())
            .map(|e| (e.span(), e.to_string()))
            .collect()
    }

    /// One `compile_error!` per error, each on its own span.
    pub fn to_compile_errors(&self) -> TokenStream {
        self.errors
            .iter()
            .map(syn::Error::to_compile_error)
            .collect()
    }
}
