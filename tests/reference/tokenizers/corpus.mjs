// The multi-script text the fixture vocabularies are trained on (make_fixtures.mjs). Written for these
// tests: English prose and code, German/French accents, Greek, Cyrillic, Arabic, Hindi, Chinese, Japanese,
// Thai, Korean, emoji (ZWJ sequences, skin tones, flags), combining marks (decomposed e + U+0301), numbers
// of every length, whitespace runs, tabs and CRLF line ends.
const english = `The quick brown fox jumps over the lazy dog. It's a well-known pangram, and they're used to test fonts.
We'll see whether the tokenizer handles contractions: I'm, you're, he's, she'd, we've, they'll, don't, can't, won't.
Tokenizers split text into pieces; a byte-level BPE never meets an unknown character, because every byte has a token.
In 1984, 12 people met 123 times over 1234 days; the total was 12345 or 123456 or 1234567 units, not 3.14159 or 2.71828.
Prices: $5, $49.99, €1,000,000 and ¥250. Dates: 2024-06-01, 31/12/1999, 07:45:30. Phone: +1 (555) 010-9999.
Visit https://example.com/path?query=value&other=1#anchor or write to someone@example.org for more information.
Whitespace matters:  two spaces,   three spaces,    four spaces, a tab\there, two tabs\t\there, and trailing spaces   
Windows line ends\r\nare common too.\r\nSo are blank lines:\n\n\nand indented blocks:\n    four spaces\n\tone tab\n`
const code = `def fibonacci(n: int) -> int:
    """Return the n-th Fibonacci number."""
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)

for i in range(10):
    print(f"{i:>3}: {fibonacci(i)}")

#include <vector>
int main(int argc, char** argv) {
  std::vector<int> values{1, 2, 3, 42, 1000};
  for (const auto& v : values) { if (v % 2 == 0) return v; }
  return 0;  // done
}
{"name": "tunebench", "version": [1, 2, 3], "enabled": true, "ratio": 0.75, "tags": ["a", "b"]}
SELECT id, name FROM users WHERE age >= 21 AND country = 'DE' ORDER BY name;
x = [a**2 for a in xs if a != 0] ; y = {k: v for k, v in zip(keys, vals)} ; z = lambda q: q // 3
`
const european = `Größenwahn über Fußgängerübergänge: Die Straße ist schön, aber die Brücke ist zu klein.
Déjà vu à l'œuvre : le garçon naïve mange une crème brûlée à côté du château. Où est la forêt ?
¿Dónde está la biblioteca? Él comió piña y jalapeños. Ça va très bien, merci beaucoup !
Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy. Árvíztűrő tükörfúrógép.
`
const greek = `Καλημέρα κόσμε! Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο. Ελληνικά γράμματα: αβγδεζηθ ΑΒΓΔ.
`
const cyrillic = `Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю. Москва — столица России.
Українська мова: Ґанок, їжак, єнот. Београд је главни град Србије.
`
const arabic = `مرحبا بالعالم! اللغة العربية جميلة جدا. كتب الطالب الدرس في الكتاب.
عدد الطلاب ١٢٣ طالبا، والساعة الآن ٧:٣٠ مساء.
`
const hindi = `नमस्ते दुनिया! हिन्दी भारत की एक प्रमुख भाषा है। मैं आज बाज़ार जा रहा हूँ।
संख्या १२३४ और शब्द क्षत्रिय, ज्ञान, श्रद्धा।
`
const cjk = `你好，世界！今天天气很好，我们去公园散步吧。中文文本没有空格，分词是一个难题。
日本語のテキストです。ひらがな、カタカナ、そして漢字が混ざっています。東京は大きい都市です。
`
const thai = `สวัสดีชาวโลก ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ กรุงเทพมหานครเป็นเมืองหลวง
`
const korean = `안녕하세요 세계! 한국어는 한글로 씁니다. 서울은 대한민국의 수도입니다. 감사합니다.
`
const emoji = `Hello 👋 world 🌍! Family: 👨‍👩‍👧‍👦, wave with skin tones 👋🏻 👋🏽 👋🏿, heart ❤️, flag 🏳️‍🌈 🇩🇪 🇯🇵.
Thumbs up 👍👍👍 and a rocket 🚀 to the moon 🌙. Faces: 😀 😂 🤔 🙃.
`
// Decomposed accents (e + U+0301, n + U+0303, a + U+0308), next to their precomposed forms.
const combining = `cafe\u0301 and café, man\u0303ana and mañana, a\u0308rger and ärger, Ame\u0301lie and Amélie.
`
export const corpus = [english, code, european, greek, cyrillic, arabic, hindi, cjk, thai, korean, emoji, combining]
  .map((part) => part.repeat(3))
  .join('\n')
