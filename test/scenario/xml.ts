/** A minimal XML reader for structural checks of the timeline SVG: well-formedness and the element list. */
export interface XmlElement {
  readonly name: string;
  readonly attrs: Readonly<Record<string, string>>;
  readonly parent: string | undefined;
}

/** Parses one XML fragment; throws if tags are not balanced or an attribute is malformed. */
export function parseXml(src: string): XmlElement[] {
  const out: XmlElement[] = [];
  const stack: string[] = [];
  const re = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|<!--[\s\S]*?-->|<([^>]*)>/g;
  let last = 0;
  for (let m = re.exec(src); m !== null; m = re.exec(src)) {
    const between = src.slice(last, m.index);
    if (/[<>]/.test(between)) throw new Error(`stray markup: ${between.slice(0, 60)}`);
    last = re.lastIndex;
    if (m[5] !== undefined) throw new Error(`malformed tag: <${m[5]}>`);
    if (m[2] === undefined) continue; // comment
    const [, close, name, attrText, selfClose] = m;
    if (close === '/') {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open ?? 'nothing'}>`);
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of attrText!.matchAll(/([\w:-]+)="([^"]*)"/g)) {
      if (a[1]! in attrs) throw new Error(`duplicate attribute ${a[1]} on <${name}>`);
      attrs[a[1]!] = a[2]!;
    }
    out.push({ name: name!, attrs, parent: stack[stack.length - 1] });
    if (selfClose !== '/') stack.push(name!);
  }
  if (/[<>]/.test(src.slice(last))) throw new Error('stray markup at the end');
  if (stack.length > 0) throw new Error(`unclosed <${stack.join('>, <')}>`);
  return out;
}

export function hasClass(e: XmlElement, c: string): boolean {
  return (e.attrs.class ?? '').split(/\s+/).includes(c);
}
