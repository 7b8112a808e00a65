//! An XML document as a tree of elements, for a fake that reads its requests by the element names of its
//! API's reference (Route53's) rather than through serde types, which would be shaped like the provider's
//! own and share its idea of the wire format.

use anyhow::{Context, Result, bail};
use quick_xml::Reader;
use quick_xml::events::Event;

/// One element: its local name (without a namespace prefix), its text, and its child elements in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Element {
    /// The local name.
    pub name: String,
    /// The text directly inside it, entities resolved, without the white space at its ends.
    pub text: String,
    /// The elements inside it, in document order.
    pub children: Vec<Element>,
}

impl Element {
    /// The root element of `xml`; an error for a document that is not well-formed.
    pub fn parse(xml: &str) -> Result<Element> {
        // Text is trimmed once an element ends, not piece by piece: an entity splits text into pieces, and
        // the spaces beside it are the value's.
        let mut reader = Reader::from_str(xml);
        // The elements open around the current one, outermost first.
        let mut open: Vec<Element> = Vec::new();
        loop {
            match reader.read_event().context("unreadable XML")? {
                Event::Start(e) => open.push(Element::named(e.local_name().as_ref())),
                Event::Empty(e) => {
                    let empty = Element::named(e.local_name().as_ref());
                    match open.last_mut() {
                        Some(parent) => parent.children.push(empty),
                        None => return Ok(empty),
                    }
                }
                Event::Text(t) => {
                    if let Some(current) = open.last_mut() {
                        current.text.push_str(&t.decode().context("text that is not UTF-8")?);
                    }
                }
                Event::GeneralRef(r) => {
                    let entity = format!("&{};", r.decode().context("an entity that is not UTF-8")?);
                    let resolved = quick_xml::escape::unescape(&entity).context("an unknown entity")?;
                    if let Some(current) = open.last_mut() {
                        current.text.push_str(&resolved);
                    }
                }
                Event::CData(t) => {
                    if let Some(current) = open.last_mut() {
                        current.text.push_str(&String::from_utf8_lossy(&t));
                    }
                }
                Event::End(_) => {
                    let Some(mut done) = open.pop() else {
                        bail!("an end tag with nothing open")
                    };
                    done.text = done.text.trim().to_string();
                    match open.last_mut() {
                        Some(parent) => parent.children.push(done),
                        None => return Ok(done),
                    }
                }
                Event::Eof => bail!("the document ends inside an element, or has none"),
                _ => {}
            }
        }
    }

    fn named(name: &[u8]) -> Element {
        Element {
            name: String::from_utf8_lossy(name).into_owned(),
            ..Element::default()
        }
    }

    /// The first child element called `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Every child element called `name`, in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The text of the first child element called `name`.
    pub fn text_of(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }

    /// The element at `path`, child by child from this one.
    pub fn at(&self, path: &[&str]) -> Option<&Element> {
        path.iter().try_fold(self, |e, name| e.child(name))
    }

    /// Every element at `path`: the first of each name down to the last step, and all of the last
    /// (`["Changes", "Change"]`: every change of the list).
    pub fn every<'a>(&'a self, path: &[&str]) -> impl Iterator<Item = &'a Element> + 'a {
        let (last, parents) = match path.split_last() {
            Some((last, parents)) => (Some(*last), parents),
            None => (None, path),
        };
        let last = last.map(str::to_string);
        self.at(parents)
            .into_iter()
            .flat_map(|p| p.children.iter())
            .filter(move |c| last.as_deref() == Some(c.name.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_texts_and_entities_are_read_in_order() -> Result<()> {
        let doc = Element::parse(
            "<?xml version=\"1.0\"?>\n<R xmlns=\"urn:x\"><A>one &amp; &#50;</A><L><I>x</I><I>y</I><E/></L></R>",
        )?;
        assert_eq!(doc.name, "R");
        assert_eq!(doc.text_of("A"), Some("one & 2"));
        let items: Vec<&str> = doc.every(&["L", "I"]).map(|i| i.text.as_str()).collect();
        assert_eq!(items, ["x", "y"]);
        assert!(doc.at(&["L", "E"]).is_some_and(|e| e.text.is_empty()));
        assert!(doc.at(&["L", "missing"]).is_none());
        assert_eq!(doc.every(&["missing", "I"]).count(), 0);
        Ok(())
    }

    #[test]
    fn a_document_that_is_not_well_formed_is_an_error() {
        assert!(Element::parse("<R><A>open</R>").is_err());
        assert!(Element::parse("<R>").is_err());
        assert!(Element::parse("").is_err());
    }
}
