//! `#[derive(Says)]`: an error's message as a person reads it, kept as its structure.
//!
//! Reads the `#[error("…")]` attribute thiserror formats `Display` from, so that the English
//! is written once: the literal becomes the message's text (`t!`, checked against the catalog
//! when the code is compiled) and each `{field}` one of its values. A value that is itself an
//! error with a message of its own is kept as that message (translated in its turn); any other
//! is data, shown as it is. `#[error(transparent)]` and `#[error("{0}")]` are the inner
//! error's message (which must say one). Extra format arguments (`.0 >> 20`) are refused: their
//! value would be English made at run time; give the error a field for it.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::{Attribute, Data, DeriveInput, Expr, Fields, LitStr, parse_macro_input};

#[proc_macro_derive(Says)]
pub fn derive_says(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match says(&input) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn says(input: &DeriveInput) -> syn::Result<Tokens> {
    let name = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let body = match &input.data {
        Data::Enum(data) => {
            let arms = data
                .variants
                .iter()
                .map(|variant| {
                    let ident = &variant.ident;
                    let (pattern, bindings) = bind(&variant.fields);
                    let message = message(&variant.attrs, &variant.fields, &bindings, variant)?;
                    Ok(quote! { Self::#ident #pattern => #message, })
                })
                .collect::<syn::Result<Vec<_>>>()?;
            quote! {
                #[allow(unused_variables)]
                match self { #(#arms)* }
            }
        }
        Data::Struct(data) => {
            let (pattern, bindings) = bind(&data.fields);
            let message = message(&input.attrs, &data.fields, &bindings, input)?;
            quote! {
                #[allow(unused_variables)]
                let Self #pattern = self;
                #message
            }
        }
        Data::Union(_) => {
            return Err(syn::Error::new_spanned(
                input,
                "Says is for enums and structs",
            ));
        }
    };
    Ok(quote! {
        impl #impl_generics crate::i18n::Says for #name #type_generics #where_clause {
            fn says(&self) -> crate::i18n::Message {
                #[allow(unused_imports)]
                use crate::i18n::{AsData as _, AsMessage as _};
                #body
            }
        }
    })
}

/// A pattern binding every field (`(f0, f1)`, `{ name, .. }`), and the name each field is
/// known by in a format string (`0`, `name`) with its binding.
fn bind(fields: &Fields) -> (Tokens, Vec<(String, syn::Ident)>) {
    match fields {
        Fields::Unit => (quote! {}, Vec::new()),
        Fields::Unnamed(fields) => {
            let names: Vec<_> = (0..fields.unnamed.len())
                .map(|i| (i.to_string(), format_ident!("f{i}")))
                .collect();
            let idents = names.iter().map(|(_, ident)| ident);
            (quote! { ( #(#idents),* ) }, names)
        }
        Fields::Named(fields) => {
            let names: Vec<_> = fields
                .named
                .iter()
                .filter_map(|field| field.ident.clone())
                .map(|ident| (ident.to_string(), ident))
                .collect();
            let idents = names.iter().map(|(_, ident)| ident);
            (quote! { { #(#idents),* } }, names)
        }
    }
}

fn message(
    attrs: &[Attribute],
    fields: &Fields,
    bindings: &[(String, syn::Ident)],
    span: &dyn quote::ToTokens,
) -> syn::Result<Tokens> {
    let attr = attrs
        .iter()
        .find(|attr| attr.path().is_ident("error"))
        .ok_or_else(|| syn::Error::new_spanned(span, "Says needs an #[error(…)] attribute"))?;
    let (first, more) = attr.parse_args_with(|input: syn::parse::ParseStream| {
        let first: Expr = input.parse()?;
        let more: Tokens = input.parse()?;
        Ok((first, !more.is_empty()))
    })?;
    if let Expr::Path(path) = &first
        && path.path.is_ident("transparent")
    {
        let (_, inner) = bindings
            .first()
            .filter(|_| fields.len() == 1)
            .ok_or_else(|| syn::Error::new_spanned(attr, "transparent needs one field"))?;
        return Ok(quote! { (&crate::i18n::Inner(#inner)).message() });
    }
    let Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(text),
        ..
    }) = &first
    else {
        return Err(syn::Error::new_spanned(
            first,
            "expected the message's text",
        ));
    };
    // Computed arguments (`.0 >> 20`) would have to be shown as English: give the error a
    // field holding the value instead.
    if more {
        return Err(syn::Error::new_spanned(
            attr,
            "Says takes the text's values from fields only; give the error a field for this value",
        ));
    }
    let found = placeholders(text)?;
    // `{0}` alone: the field is the whole message (an error passed on, or a reason).
    if let [(name, spec)] = &found[..]
        && spec.is_empty()
        && text.value() == format!("{{{name}}}")
        && let Some((_, field)) = bindings.iter().find(|(known, _)| known == name)
    {
        return Ok(quote! { (&crate::i18n::Inner(#field)).message() });
    }
    let mut values = Vec::new();
    for (name, spec) in found {
        // A field, or a constant in scope (`{MAX_ROWS}`), as format strings take them.
        let ident = match bindings.iter().find(|(known, _)| *known == name) {
            Some((_, field)) => quote! { #field },
            None => {
                let constant = syn::Ident::new(&name, text.span());
                quote! { &#constant }
            }
        };
        let key = LitStr::new(&name, text.span());
        values.push(if spec.contains('?') {
            quote! { .value(#key, crate::i18n::Value::Data(format!("{:?}", #ident))) }
        } else {
            quote! { .value(#key, (&crate::i18n::Inner(#ident)).value()) }
        });
    }
    Ok(quote! {
        crate::i18n::Message::formatted(crate::t!(#text)) #(#values)*
    })
}

/// The `{name}` and `{name:spec}` of a format string, `{{` and `}}` being braces.
fn placeholders(text: &LitStr) -> syn::Result<Vec<(String, String)>> {
    let value = text.value();
    let mut out = Vec::new();
    let mut chars = value.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' if chars.peek().is_some_and(|(_, next)| *next == '{') => {
                chars.next();
            }
            '{' => {
                let close = value[at..]
                    .find('}')
                    .ok_or_else(|| syn::Error::new_spanned(text, "an unclosed {"))?;
                let inside = &value[at + 1..at + close];
                let (name, spec) = inside.split_once(':').unwrap_or((inside, ""));
                if name.is_empty() {
                    return Err(syn::Error::new_spanned(
                        text,
                        "name the field ({0}, {name}) instead of {}",
                    ));
                }
                if !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    return Err(syn::Error::new_spanned(
                        text,
                        format!("{{{name}}} is not a name"),
                    ));
                }
                out.push((name.to_owned(), spec.to_owned()));
                while chars.next().is_some_and(|(i, _)| i < at + close) {}
            }
            _ => {}
        }
    }
    Ok(out)
}
