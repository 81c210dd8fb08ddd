/* A header for check_doc_links.sh's negative control: it cites
 * docs/page.md, which the install holds, and docs/absent.md, which it does
 * not (must be reported). */
