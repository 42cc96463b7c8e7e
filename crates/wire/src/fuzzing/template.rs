//! The placeholder grammar of requests that vary (`vary::Template`).

use crate::vary::{Draw, Template};

/// Any text reads as a template or says where it does not; a template that reads is spelled
/// in a form that reads back to the same template, and renders what its parts say.
pub fn template(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(t) = Template::parse(&text) else {
        return;
    };
    let spelled = t.to_string();
    assert_eq!(
        Template::parse(&spelled).as_ref(),
        Ok(&t),
        "{text:?} spelled {spelled:?}"
    );
    if let Some(fixed) = t.fixed() {
        // without placeholders the text renders as itself (a quoted `{{"{{"}}` as `{{`)
        let mut out = Vec::new();
        t.render(&mut Draw::new(1), &mut out);
        assert_eq!(out, fixed.as_bytes());
    }
    let mut out = Vec::new();
    t.render(&mut Draw::new(1), &mut out);
    assert!(out.len() <= text.len() * 40 + 64);
}
